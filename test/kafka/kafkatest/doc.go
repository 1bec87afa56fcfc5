// Package kafkatest runs Apache Kafka 4.4.0 on loopback for the real-broker tests: KRaft
// clusters of 1 or 3 combined broker and controller nodes, formatted with transaction.version
// 2 or 1, each node a JVM started from the jars Maven resolves (pom.xml). Linux only (it
// reads /proc and signals the JVMs).
//
// A real-broker test is in a file with the build tag kafka and its name starts with
// TestKafka (make test-kafka runs exactly those):
//
//	//go:build kafka
//
//	func TestKafkaEcho(t *testing.T) {
//		c := kafkatest.Start(t, kafkatest.Options{Nodes: 3})
//		in := kafkatest.Name(t, "in")
//		c.CreateTopic(t, in, 3, nil)
//		... // bootstrap.servers = c.BootstrapServers()
//	}
//
// Under make test-kafka the clusters are shared by every test of every package (EnvDir names
// their directory); a test that kills, pauses or restarts nodes asks for the cluster
// exclusively (Options.Exclusive), and the cluster is healed when it ends. Run by hand
// without EnvDir, each test starts a cluster of its own. docs/testing.md has the rest.
package kafkatest

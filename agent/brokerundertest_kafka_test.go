//go:build kafka

package agent

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// onKafka is the Apache Kafka 4.4 cluster of o (the shared one under make test-kafka) with
// topics of the test's own, partitions each.
func onKafka(t *testing.T, o kafkatest.Options, partitions int32, topics ...string) *brokerUnderTest {
	t.Helper()
	return onCluster(t, kafkatest.Start(t, o), partitions, topics...)
}

// onCluster is onKafka on a cluster the test already has (to set its group configs): outside
// make test-kafka, each kafkatest.Start of a test starts a cluster of its own.
func onCluster(t *testing.T, c *kafkatest.Cluster, partitions int32, topics ...string) *brokerUnderTest {
	t.Helper()
	b := &brokerUnderTest{
		kind: "kafka", brokers: c.Bootstrap(), nodes: len(c.NodeIDs()),
		name: kafkatest.Name,
		create: func(t testing.TB, topic string, partitions int32, configs map[string]string) {
			t.Helper()
			c.CreateTopic(t, topic, partitions, configs)
		},
	}
	b.newTopics(t, partitions, topics...)
	return b
}

// onKafkaCluster is a brokerFor of subtests on the cluster of o, run in parallel.
func onKafkaCluster(o kafkatest.Options) brokerFor {
	return func(t *testing.T, partitions int32, topics ...string) *brokerUnderTest {
		t.Parallel()
		return onKafka(t, o, partitions, topics...)
	}
}

// twin runs body, in parallel with the other twins, on the cluster of o with topics of the
// test's own, partitions each.
func twin(t *testing.T, o kafkatest.Options, body func(*testing.T, *brokerUnderTest), partitions int32, topics ...string) {
	t.Parallel()
	body(t, onKafka(t, o, partitions, topics...))
}

// transactionalTwin runs body as twin does, on the single-node cluster of each transaction
// protocol (kafkatest.EachTransactionVersion).
func transactionalTwin(t *testing.T, body func(*testing.T, *brokerUnderTest), partitions int32, topics ...string) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) {
		body(t, onKafka(t, o, partitions, topics...))
	})
}

package kafkatest

import (
	"fmt"
	"path/filepath"
	"strings"
)

// serverProperties is node n's server.properties: a combined broker and controller on
// loopback, with the replication settings of a production cluster of the same size and the
// few changes that make a test cluster fast (docs/testing.md lists them and says why).
func (c *Cluster) serverProperties(n nodeInfo) string {
	voters := make([]string, len(c.info.Nodes))
	for i, v := range c.info.Nodes {
		voters[i] = fmt.Sprintf("%d@127.0.0.1:%d", v.ID, v.ControllerPort)
	}
	rf := len(c.info.Nodes)
	minISR := min(2, rf)
	props := []string{
		"process.roles=broker,controller",
		fmt.Sprintf("node.id=%d", n.ID),
		"controller.quorum.voters=" + strings.Join(voters, ","),
		"controller.listener.names=CONTROLLER",
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", n.BrokerPort, n.ControllerPort),
		fmt.Sprintf("advertised.listeners=PLAINTEXT://127.0.0.1:%d", n.BrokerPort),
		"inter.broker.listener.name=PLAINTEXT",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"log.dirs=" + filepath.Join(c.nodeDir(n.ID), "data"),

		// Durability as a production cluster of this size would have it.
		fmt.Sprintf("default.replication.factor=%d", rf),
		fmt.Sprintf("min.insync.replicas=%d", minISR),
		fmt.Sprintf("offsets.topic.replication.factor=%d", rf),
		fmt.Sprintf("transaction.state.log.replication.factor=%d", rf),
		fmt.Sprintf("transaction.state.log.min.isr=%d", minISR),
		fmt.Sprintf("share.coordinator.state.topic.replication.factor=%d", rf),
		fmt.Sprintf("share.coordinator.state.topic.min.isr=%d", minISR),

		// A topic a test did not create is a bug of the test or of the agent, not something
		// to paper over with a one-partition topic.
		"auto.create.topics.enable=false",
		// Fewer partitions of the internal topics: created (by Up) in a fraction of the time.
		"offsets.topic.num.partitions=10",
		"transaction.state.log.num.partitions=10",
		// A new classic group rebalances at once instead of waiting 3 s for more members.
		"group.initial.rebalance.delay.ms=0",
		// Lower minimums only, so that a test may ask for short sessions and heartbeats; the
		// defaults stay Kafka's.
		"group.min.session.timeout.ms=1000",
		"group.consumer.min.session.timeout.ms=1000",
		"group.consumer.min.heartbeat.interval.ms=100",
		"group.streams.min.session.timeout.ms=1000",
		"group.streams.min.heartbeat.interval.ms=100",
		// Transactions past their timeout are aborted within a second instead of 10 s, so a
		// zombie test need not wait.
		"transaction.abort.timed.out.transaction.cleanup.interval.ms=1000",
		// The log cleaner (compacted changelogs) allocates this on the heap; 128 MiB by
		// default, more than a test node's whole heap should give it.
		"log.cleaner.dedupe.buffer.size=8388608",
	}
	return strings.Join(props, "\n") + "\n"
}

//go:build kafka

package agent

import (
	"fmt"
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// onKafka is the Apache Kafka 4.4 cluster of o (the shared one under make test-kafka) with
// topics of the test's own, partitions each.
func onKafka(t *testing.T, o kafkatest.Options, partitions int32, topics ...string) (*brokerUnderTest, *kafkatest.Cluster) {
	t.Helper()
	c := kafkatest.Start(t, o)
	b := &brokerUnderTest{
		kind: kindOf(o), brokers: c.Bootstrap(), nodes: len(c.NodeIDs()),
		name: kafkatest.Name,
		create: func(t testing.TB, topic string, partitions int32, configs map[string]string) {
			t.Helper()
			c.CreateTopic(t, topic, partitions, configs)
		},
	}
	b.newTopics(t, partitions, topics...)
	return b, c
}

// kindOf names the cluster's shape as kafkatest does: n1-tv2, n3-tv2, n1-tv1.
func kindOf(o kafkatest.Options) string {
	nodes, tv := max(o.Nodes, 1), o.TransactionVersion
	if tv == 0 {
		tv = 2
	}
	return fmt.Sprintf("n%d-tv%d", nodes, tv)
}

// bothTransactionVersions runs body on the single-node cluster formatted with
// transaction.version 2 (Kafka 4.4's default) and on the one with 1, in parallel subtests
// named tv2 and tv1.
func bothTransactionVersions(t *testing.T, body func(t *testing.T, tv int)) {
	for _, tv := range []int{2, 1} {
		t.Run(fmt.Sprintf("tv%d", tv), func(t *testing.T) {
			t.Parallel()
			body(t, tv)
		})
	}
}

// onKafkaCluster is a brokerFor of subtests on the cluster of o, run in parallel.
func onKafkaCluster(o kafkatest.Options) brokerFor {
	return func(t *testing.T, partitions int32, topics ...string) *brokerUnderTest {
		t.Parallel()
		b, _ := onKafka(t, o, partitions, topics...)
		return b
	}
}

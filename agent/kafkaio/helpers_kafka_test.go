//go:build kafka

package kafkaio

import (
	"fmt"
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// kafkaCluster is a testCluster on Apache Kafka 4.4.
type kafkaCluster struct{ *kafkatest.Cluster }

func (c kafkaCluster) Addrs() []string { return c.Bootstrap() }

// onKafka is the Apache Kafka 4.4 cluster of o (the shared one under make test-kafka).
func onKafka(t *testing.T, o kafkatest.Options) kafkaCluster {
	t.Helper()
	return kafkaCluster{kafkatest.Start(t, o)}
}

// onKafkaInParallel is the broker of each subtest of a body: the cluster of o, the
// subtests in parallel.
func onKafkaInParallel(o kafkatest.Options) func(t *testing.T) testCluster {
	return func(t *testing.T) testCluster {
		t.Parallel()
		return onKafka(t, o)
	}
}

// bothTransactionVersions runs body on the single-node cluster formatted with
// transaction.version 2 (Kafka 4.4's default) and on the one with 1, in parallel subtests
// named tv2 and tv1.
func bothTransactionVersions(t *testing.T, body func(t *testing.T, o kafkatest.Options)) {
	for _, tv := range []int{2, 1} {
		t.Run(fmt.Sprintf("tv%d", tv), func(t *testing.T) {
			t.Parallel()
			body(t, kafkatest.Options{TransactionVersion: tv})
		})
	}
}

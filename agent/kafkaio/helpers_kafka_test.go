//go:build kafka

package kafkaio

import (
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

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

// twin runs body, in parallel with the other twins, on the cluster of o.
func twin(t *testing.T, o kafkatest.Options, body func(*testing.T, testCluster)) {
	t.Parallel()
	body(t, onKafka(t, o))
}

// transactionalTwin runs body on the single-node cluster of each transaction protocol
// (kafkatest.EachTransactionVersion).
func transactionalTwin(t *testing.T, body func(*testing.T, testCluster)) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) { body(t, onKafka(t, o)) })
}

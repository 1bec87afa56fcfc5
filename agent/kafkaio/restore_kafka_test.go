//go:build kafka

// The twins of restore_test.go on Apache Kafka 4.4: the changelog reader, on both
// transaction protocols where transactions write what it reads.

package kafkaio

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaReadToEndSkipsAbortedTransactions(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) { readToEndSkipsAbortedTransactions(t, onKafka(t, o)) })
}

func TestKafkaReadToEndEmptyPartition(t *testing.T) {
	t.Parallel()
	readToEndEmptyPartition(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaReadToEndManyFetches(t *testing.T) {
	t.Parallel()
	readToEndManyFetches(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaReadToEndErrors(t *testing.T) {
	t.Parallel()
	readToEndErrors(t, onKafka(t, kafkatest.Options{}))
}

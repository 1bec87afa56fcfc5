//go:build kafka

// The twins of restore_test.go on Apache Kafka 4.4: the changelog reader, on both
// transaction protocols where transactions write what it reads.

package kafkaio

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaReadToEndSkipsAbortedTransactions(t *testing.T) {
	transactionalTwin(t, readToEndSkipsAbortedTransactions)
}

func TestKafkaReadToEndEmptyPartition(t *testing.T) {
	twin(t, kafkatest.Options{}, readToEndEmptyPartition)
}

func TestKafkaReadToEndManyFetches(t *testing.T) { twin(t, kafkatest.Options{}, readToEndManyFetches) }

func TestKafkaReadToEndErrors(t *testing.T) { twin(t, kafkatest.Options{}, readToEndErrors) }

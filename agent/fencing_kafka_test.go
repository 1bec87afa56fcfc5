//go:build kafka && !race

// The twins of fencing_test.go on Apache Kafka 4.4, on both transaction protocols (without
// the race detector, as the originals: IBM/sarama#2913).

package agent

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaFencedProducerRejoins(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) {
		b := onKafka(t, o, 2, "in", "out")
		fencedProducerRejoins(t, b)
	})
}

func TestKafkaTakenOverByAnotherAgentStops(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) {
		b := onKafka(t, o, 2, "in", "out")
		takenOverByAnotherAgentStops(t, b)
	})
}

func TestKafkaPausedLongerThanTheTransactionTimeout(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) {
		b := onKafka(t, o, 2, "in", "out")
		pausedLongerThanTheTransactionTimeout(t, b)
	})
}

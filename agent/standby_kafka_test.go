//go:build kafka

// The twins of standby_test.go on Apache Kafka 4.4, on both transaction protocols.

package agent

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaSeveralAgentsOneActiveExactCounts(t *testing.T) {
	bothTransactionVersions(t, func(t *testing.T, tv int) {
		b, _ := onKafka(t, kafkatest.Options{TransactionVersion: tv}, 3, "in", "out")
		severalAgentsOneActive(t, b)
	})
}

func TestKafkaAgentRefusedByGroupOfAnotherProtocol(t *testing.T) {
	t.Parallel()
	b, _ := onKafka(t, kafkatest.Options{}, 2, "in", "out")
	refusedByGroupOfAnotherProtocol(t, b)
}

func TestKafkaTakeoverWhenTheActiveDies(t *testing.T) {
	bothTransactionVersions(t, func(t *testing.T, tv int) {
		b, _ := onKafka(t, kafkatest.Options{TransactionVersion: tv}, 3, "in", "out")
		takeoverWhenTheActiveDies(t, b)
	})
}

func TestKafkaStoppingActiveHandsOverAtOnce(t *testing.T) {
	bothTransactionVersions(t, func(t *testing.T, tv int) {
		b, _ := onKafka(t, kafkatest.Options{TransactionVersion: tv}, 2, "in", "out")
		stoppingActiveHandsOverAtOnce(t, b)
	})
}

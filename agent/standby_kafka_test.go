//go:build kafka

// The twins of standby_test.go on Apache Kafka 4.4, on both transaction protocols.

package agent

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaSeveralAgentsOneActiveExactCounts(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) {
		b := onKafka(t, o, 3, "in", "out")
		severalAgentsOneActive(t, b)
	})
}

func TestKafkaAgentRefusedByGroupOfAnotherProtocol(t *testing.T) {
	t.Parallel()
	b := onKafka(t, kafkatest.Options{}, 2, "in", "out")
	refusedByGroupOfAnotherProtocol(t, b)
}

func TestKafkaTakeoverWhenTheActiveDies(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) {
		b := onKafka(t, o, 3, "in", "out")
		takeoverWhenTheActiveDies(t, b)
	})
}

func TestKafkaStoppingActiveHandsOverAtOnce(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) {
		b := onKafka(t, o, 2, "in", "out")
		stoppingActiveHandsOverAtOnce(t, b)
	})
}

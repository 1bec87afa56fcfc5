//go:build kafka

// The twins of standby_test.go on Apache Kafka 4.4, on both transaction protocols.

package agent

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaSeveralAgentsOneActiveExactCounts(t *testing.T) {
	transactionalTwin(t, severalAgentsOneActive, 3, "in", "out")
}

func TestKafkaAgentRefusedByGroupOfAnotherProtocol(t *testing.T) {
	twin(t, kafkatest.Options{}, refusedByGroupOfAnotherProtocol, 2, "in", "out")
}

func TestKafkaTakeoverWhenTheActiveDies(t *testing.T) {
	transactionalTwin(t, takeoverWhenTheActiveDies, 3, "in", "out")
}

func TestKafkaStoppingActiveHandsOverAtOnce(t *testing.T) {
	transactionalTwin(t, stoppingActiveHandsOverAtOnce, 2, "in", "out")
}

func TestKafkaTakeoverReadsTheGlobalTablesFirst(t *testing.T) {
	twin(t, kafkatest.Options{}, takeoverReadsTheGlobalTablesFirst, 1, "orders", "products", "out")
}

//go:build kafka

// The twins on Apache Kafka 4.4 of the tests of an agent's workers (workers_test.go) and of
// what it reports of its brokers (brokers_test.go).

package agent

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaRebalanceMovesATaskBetweenWorkers(t *testing.T) {
	twin(t, kafkatest.Options{}, rebalanceMovesATaskBetweenWorkers, 3, "in", "out", "copies")
}

func TestKafkaReachableBrokerIsReported(t *testing.T) {
	twin(t, kafkatest.Options{}, reachableBrokerIsReported, 1, "in", "out")
}

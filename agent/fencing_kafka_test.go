//go:build kafka && !race

// The twins of fencing_test.go on Apache Kafka 4.4, on both transaction protocols (without
// the race detector, as the originals: IBM/sarama#2913).

package agent

import "testing"

func TestKafkaFencedProducerRejoins(t *testing.T) {
	transactionalTwin(t, fencedProducerRejoins, 2, "in", "out")
}

func TestKafkaTakenOverByAnotherAgentStops(t *testing.T) {
	transactionalTwin(t, takenOverByAnotherAgentStops, 2, "in", "out")
}

func TestKafkaPausedLongerThanTheTransactionTimeout(t *testing.T) {
	transactionalTwin(t, pausedLongerThanTheTransactionTimeout, 2, "in", "out")
}

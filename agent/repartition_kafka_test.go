//go:build kafka

// The twin of repartition_test.go on Apache Kafka 4.4, on both transaction protocols.

package agent

import "testing"

func TestKafkaRepartitionThroughTopics(t *testing.T) {
	transactionalTwin(t, repartitionThroughTopics, 4, "in", "out")
}

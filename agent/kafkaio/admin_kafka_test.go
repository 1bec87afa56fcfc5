//go:build kafka

// The twin of admin_test.go's EnsureTopics test on Apache Kafka 4.4's three nodes.

package kafkaio

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaEnsureTopicsReturnsOnceTheTopicsAreUsable(t *testing.T) {
	t.Parallel()
	ensureTopicsReturnsOnceTheTopicsAreUsable(t, onKafka(t, kafkatest.Options{Nodes: 3}))
}

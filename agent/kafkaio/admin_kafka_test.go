//go:build kafka

// The twins of admin_test.go on Apache Kafka 4.4 (EnsureTopics' wait on its three nodes).

package kafkaio

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaEnsureTopicsReturnsOnceTheTopicsAreUsable(t *testing.T) {
	t.Parallel()
	ensureTopicsReturnsOnceTheTopicsAreUsable(t, onKafka(t, kafkatest.Options{Nodes: 3}))
}

func TestKafkaEnsureTopicsErrors(t *testing.T) {
	t.Parallel()
	ensureTopicsErrors(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaPartitionCountsMissingTopic(t *testing.T) {
	t.Parallel()
	partitionCountsMissingTopic(t, onKafka(t, kafkatest.Options{}))
}

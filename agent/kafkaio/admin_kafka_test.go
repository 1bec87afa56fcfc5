//go:build kafka

// The twins of admin_test.go on Apache Kafka 4.4 (EnsureTopics' wait on its three nodes).

package kafkaio

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaEnsureTopicsReturnsOnceTheTopicsAreUsable(t *testing.T) {
	twin(t, kafkatest.Options{Nodes: 3}, ensureTopicsReturnsOnceTheTopicsAreUsable)
}

func TestKafkaEnsureTopicsErrors(t *testing.T) { twin(t, kafkatest.Options{}, ensureTopicsErrors) }

func TestKafkaPartitionCountsMissingTopic(t *testing.T) {
	twin(t, kafkatest.Options{}, partitionCountsMissingTopic)
}

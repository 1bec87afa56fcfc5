//go:build kafka

// The twins of internaltopics_test.go and stores_test.go on Apache Kafka 4.4: changelog
// topics as created, and as restored from. On the three-node cluster the changelogs take
// replication.factor, or the broker's default without it.

package agent

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaChangelogTopicsAsKafkaStreamsCreatesThem(t *testing.T) {
	for name, replication := range map[string]int{"broker default": -1, "replication.factor 2": 2} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := onKafka(t, kafkatest.Options{Nodes: 3}, 1, "in", "out")
			changelogTopicsAsKafkaStreams(t, b, replication)
		})
	}
}

func TestKafkaExistingChangelogOfOtherPartitionsIsRefused(t *testing.T) {
	twin(t, kafkatest.Options{}, existingChangelogOfOtherPartitionsIsRefused, 2, "in", "out")
}

// Every store kind's changelog records, as Apache Kafka keeps them, restore the stores.
func TestKafkaStoreKindsChangelogBytesAndRestore(t *testing.T) {
	transactionalTwin(t, storeKindsChangelogBytesAndRestore, 1, "in", "out")
}

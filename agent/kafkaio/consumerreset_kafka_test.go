//go:build kafka

// The twins of offsetreset_test.go, rewind_test.go and subscribe_test.go on Apache Kafka
// 4.4: where a member starts, starts again, and what it subscribes to.

package kafkaio

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaOffsetResetPolicies(t *testing.T) { twin(t, kafkatest.Options{}, offsetResetPolicies) }

func TestKafkaOffsetResetNoneFails(t *testing.T) { twin(t, kafkatest.Options{}, offsetResetNoneFails) }

func TestKafkaRewindResumesFromCommittedOffsets(t *testing.T) {
	t.Parallel()
	rewindResumesFromCommittedOffsets(t, onKafkaInParallel(kafkatest.Options{}))
}

func TestKafkaRewindDropsBufferedBatches(t *testing.T) {
	twin(t, kafkatest.Options{}, rewindDropsBufferedBatches)
}

func TestKafkaSubscribeToATopicCreatedLater(t *testing.T) {
	twin(t, kafkatest.Options{}, subscribeToATopicCreatedLater)
}

func TestKafkaRewindWithoutGeneration(t *testing.T) {
	twin(t, kafkatest.Options{}, rewindWithoutGeneration)
}

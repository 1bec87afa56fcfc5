//go:build kafka

// The twins of offsetreset_test.go, rewind_test.go and subscribe_test.go on Apache Kafka
// 4.4: where a member starts, starts again, and what it subscribes to.

package kafkaio

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaOffsetResetPolicies(t *testing.T) {
	t.Parallel()
	offsetResetPolicies(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaOffsetResetNoneFails(t *testing.T) {
	t.Parallel()
	offsetResetNoneFails(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaRewindResumesFromCommittedOffsets(t *testing.T) {
	t.Parallel()
	rewindResumesFromCommittedOffsets(t, onKafkaInParallel(kafkatest.Options{}))
}

func TestKafkaRewindDropsBufferedBatches(t *testing.T) {
	t.Parallel()
	rewindDropsBufferedBatches(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaSubscribeToATopicCreatedLater(t *testing.T) {
	t.Parallel()
	subscribeToATopicCreatedLater(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaRewindWithoutGeneration(t *testing.T) {
	t.Parallel()
	rewindWithoutGeneration(t, onKafka(t, kafkatest.Options{}))
}

//go:build kafka

// The twins of offsetreset_test.go on Apache Kafka 4.4.

package agent

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaAutoOffsetResetLatestAndASourcePolicy(t *testing.T) {
	t.Parallel()
	b := onKafka(t, kafkatest.Options{}, 1, "old", "keep", "out")
	autoOffsetResetLatestAndASourcePolicy(t, b)
}

func TestKafkaOffsetResetNoneStopsTheAgent(t *testing.T) {
	t.Parallel()
	b := onKafka(t, kafkatest.Options{}, 1, "in", "out")
	offsetResetNoneStopsTheAgent(t, b)
}

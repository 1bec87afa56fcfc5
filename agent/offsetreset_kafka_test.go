//go:build kafka

// The twins of offsetreset_test.go on Apache Kafka 4.4.

package agent

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaAutoOffsetResetLatestAndASourcePolicy(t *testing.T) {
	twin(t, kafkatest.Options{}, autoOffsetResetLatestAndASourcePolicy, 1, "old", "keep", "out")
}

func TestKafkaOffsetResetNoneStopsTheAgent(t *testing.T) {
	twin(t, kafkatest.Options{}, offsetResetNoneStopsTheAgent, 1, "in", "out")
}

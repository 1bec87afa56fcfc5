//go:build kafka

// The twin of examples_test.go on Apache Kafka 4.4.

package agent

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaExamplesRunWithTheirDemoFeeders(t *testing.T) {
	t.Parallel()
	examplesRunWithTheirDemoFeeders(t, func(t *testing.T) *brokerUnderTest {
		t.Parallel()
		b := onKafka(t, kafkatest.Options{}, 1)
		return b
	})
}

//go:build kafka && !race

// The twin of faults_standby_test.go on Apache Kafka 4.4, on both transaction protocols
// (without the race detector, as the original: IBM/sarama#2913).

package agent

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaKillTheActiveCycles(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) {
		b := onKafka(t, o, 3, "in", "out")
		killTheActiveCycles(t, b, 3)
	})
}

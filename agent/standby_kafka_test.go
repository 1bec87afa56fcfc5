//go:build kafka && !race

// The twins of the standby tests on Apache Kafka 4.4 (without the race detector where the
// originals run without it: IBM/sarama#2913).

package agent

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaKillTheActiveCycles(t *testing.T) {
	bothTransactionVersions(t, func(t *testing.T, tv int) {
		b, _ := onKafka(t, kafkatest.Options{TransactionVersion: tv}, 3, "in", "out")
		killTheActiveCycles(t, b, 3)
	})
}

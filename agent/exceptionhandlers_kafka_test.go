//go:build kafka

// The twins of the dead-letter and exception handler tests of exceptionhandlers_test.go on
// Apache Kafka 4.4 (their subtests in parallel).

package agent

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaHandlerContinueExactlyOnce(t *testing.T) {
	bothTransactionVersions(t, func(t *testing.T, tv int) {
		handlerContinueExactlyOnce(t, onKafkaCluster(kafkatest.Options{TransactionVersion: tv}))
	})
}

func TestKafkaHandlerFailWritesDeadLetter(t *testing.T) {
	t.Parallel()
	handlerFailWritesDeadLetter(t, onKafkaCluster(kafkatest.Options{}))
}

// The broker's own refusal (over the topic's max.message.bytes) is Apache Kafka's answer
// here, not kfake's imitation of it.
func TestKafkaProductionHandlerBrokerRefusedRecord(t *testing.T) {
	bothTransactionVersions(t, func(t *testing.T, tv int) {
		productionHandlerBrokerRefusedRecord(t, onKafkaCluster(kafkatest.Options{TransactionVersion: tv}))
	})
}

func TestKafkaHandlerContinueWithoutDeadLetterTopic(t *testing.T) {
	t.Parallel()
	b, _ := onKafka(t, kafkatest.Options{}, 1, "in", "out")
	handlerContinueWithoutDeadLetterTopic(t, b)
}

func TestKafkaProductionHandlerContinue(t *testing.T) {
	t.Parallel()
	productionHandlerContinue(t, onKafkaCluster(kafkatest.Options{}))
}

func TestKafkaProductionHandlerFailNamesTheRecord(t *testing.T) {
	t.Parallel()
	b, _ := onKafka(t, kafkatest.Options{}, 1, "in", "out")
	productionHandlerFailNamesTheRecord(t, b)
}

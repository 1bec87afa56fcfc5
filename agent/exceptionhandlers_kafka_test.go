//go:build kafka

// The twins of the dead-letter and exception handler tests of exceptionhandlers_test.go on
// Apache Kafka 4.4 (their subtests in parallel).

package agent

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaHandlerContinueExactlyOnce(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) {
		handlerContinueExactlyOnce(t, onKafkaCluster(o))
	})
}

func TestKafkaHandlerFailWritesDeadLetter(t *testing.T) {
	t.Parallel()
	handlerFailWritesDeadLetter(t, onKafkaCluster(kafkatest.Options{}))
}

// The broker's own refusal (over the topic's max.message.bytes) is Apache Kafka's answer
// here, not kfake's imitation of it.
func TestKafkaProductionHandlerBrokerRefusedRecord(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) {
		productionHandlerBrokerRefusedRecord(t, onKafkaCluster(o))
	})
}

func TestKafkaHandlerContinueWithoutDeadLetterTopic(t *testing.T) {
	twin(t, kafkatest.Options{}, handlerContinueWithoutDeadLetterTopic, 1, "in", "out")
}

func TestKafkaProductionHandlerContinue(t *testing.T) {
	t.Parallel()
	productionHandlerContinue(t, onKafkaCluster(kafkatest.Options{}))
}

func TestKafkaProductionHandlerFailNamesTheRecord(t *testing.T) {
	twin(t, kafkatest.Options{}, productionHandlerFailNamesTheRecord, 1, "in", "out")
}

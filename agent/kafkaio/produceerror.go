package kafkaio

import (
	"errors"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
)

// ProduceError is a record the broker did not take. Send and Flush return it (wrapped),
// unless Producer.OnFailure consumed it.
type ProduceError struct {
	Topic      string
	Partition  int32
	Key, Value []byte                 // the record as sent
	Source     *pipeline.SourceRecord // the consumed record it came from (Send's source); nil if none
	// Unsent says the producer refused the record before sending it (ErrRecordTooLarge):
	// nothing else of the batch or the transaction is affected.
	Unsent bool
	Err    error
}

// ErrRecordTooLarge is a record larger than max.request.size (sarama's
// Producer.MaxMessageBytes), refused by Send.
var ErrRecordTooLarge = errors.New("record larger than max.request.size")

func (e *ProduceError) Error() string {
	if e.Source != nil {
		return fmt.Sprintf("produce to topic %q partition %d (from record %s-%d@%d): %v",
			e.Topic, e.Partition, e.Source.Topic, e.Source.Partition, e.Source.Offset, e.Err)
	}
	return fmt.Sprintf("produce to topic %q partition %d: %v", e.Topic, e.Partition, e.Err)
}

func (e *ProduceError) Unwrap() error { return e.Err }

// fatalProduceErrors fail the same way however often the epoch is processed again: the
// record or the topic is wrong, or access is denied.
var fatalProduceErrors = []error{
	ErrRecordTooLarge,
	sarama.ErrMessageSizeTooLarge, sarama.ErrInvalidMessage, sarama.ErrInvalidMessageSize,
	sarama.ErrInvalidRecord, sarama.ErrInvalidTopic,
	sarama.ErrTopicAuthorizationFailed, sarama.ErrClusterAuthorizationFailed,
	sarama.ErrTransactionalIDAuthorizationFailed, sarama.ErrInvalidRequiredAcks,
}

// Retriable reports whether processing the epoch again may succeed: a lost connection, a
// leader change or a broker that is away for a while, as Kafka's RetriableException.
func (e *ProduceError) Retriable() bool {
	var config sarama.ConfigurationError // e.g. a record over Producer.MaxMessageBytes
	if errors.Is(e.Err, ErrFenced) || errors.As(e.Err, &config) {
		return false
	}
	for _, f := range fatalProduceErrors {
		if errors.Is(e.Err, f) {
			return false
		}
	}
	return true
}

//go:build kafka

// The twins of producer_test.go and sender_test.go on Apache Kafka 4.4: placement,
// batching, codecs, refusals and transactions as the real broker answers them (the
// transactional ones on both transaction protocols). Retries, duplicates and
// out-of-order sequences, which the kfake tests inject, happen here for real in
// TestKafkaIdempotenceAcrossLeaderChanges.

package kafkaio

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaProducerExplicitPartition(t *testing.T) {
	twin(t, kafkatest.Options{}, producerExplicitPartition)
}

func TestKafkaProducerKeyHashIsMurmur2(t *testing.T) {
	twin(t, kafkatest.Options{}, producerKeyHashIsMurmur2)
}

func TestKafkaProducerFlushWaitsForAcks(t *testing.T) {
	twin(t, kafkatest.Options{}, producerFlushWaitsForAcks)
}

func TestKafkaProducerPartitionsFor(t *testing.T) {
	twin(t, kafkatest.Options{}, producerPartitionsFor)
}

func TestKafkaProducerOnFailure(t *testing.T) { twin(t, kafkatest.Options{}, producerOnFailure) }

func TestKafkaProducerRefusesTooLargeRecordBeforeSending(t *testing.T) {
	transactionalTwin(t, producerRefusesTooLargeRecordBeforeSending)
}

func TestKafkaProducerWithoutAcks(t *testing.T) { twin(t, kafkatest.Options{}, producerWithoutAcks) }

func TestKafkaProducerCompressionCodecs(t *testing.T) {
	twin(t, kafkatest.Options{}, producerCompressionCodecs)
}

func TestKafkaTxnRecordsVisibleOnlyOnceCommitted(t *testing.T) {
	transactionalTwin(t, txnRecordsVisibleOnlyOnceCommitted)
}

func TestKafkaTxnRefusesRecordOutsideTransaction(t *testing.T) {
	twin(t, kafkatest.Options{}, txnRefusesRecordOutsideTransaction)
}

func TestKafkaProducerLingerAndBatchSize(t *testing.T) {
	transactionalTwin(t, producerLingerAndBatchSize)
}

func TestKafkaProducerUnknownTopicFailsTheRecord(t *testing.T) {
	twin(t, kafkatest.Options{}, producerUnknownTopicFailsTheRecord)
}

func TestKafkaProducerReusesAcknowledgedMessagesAcrossGC(t *testing.T) {
	twin(t, kafkatest.Options{}, producerReusesAcknowledgedMessagesAcrossGC)
}

func TestKafkaTrackOffsetsAsksTrackOncePerSend(t *testing.T) {
	twin(t, kafkatest.Options{}, trackOffsetsAsksTrackOncePerSend)
}

func TestKafkaProducerRecordsOfAnUnknownTopicHoldBufferRoom(t *testing.T) {
	twin(t, kafkatest.Options{}, producerRecordsOfAnUnknownTopicHoldBufferRoom)
}

func TestKafkaProducerTopicLookupGivesUpAfterMaxBlock(t *testing.T) {
	twin(t, kafkatest.Options{}, producerTopicLookupGivesUpAfterMaxBlock)
}

// Apache Kafka's own MESSAGE_TOO_LARGE for a batch over the topic's max.message.bytes.
func TestKafkaProducerSplitsBatchTooLarge(t *testing.T) {
	twin(t, kafkatest.Options{}, producerSplitsBatchTooLarge)
}

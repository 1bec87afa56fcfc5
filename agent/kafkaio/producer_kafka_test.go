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
	t.Parallel()
	producerExplicitPartition(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaProducerKeyHashIsMurmur2(t *testing.T) {
	t.Parallel()
	producerKeyHashIsMurmur2(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaProducerFlushWaitsForAcks(t *testing.T) {
	t.Parallel()
	producerFlushWaitsForAcks(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaProducerPartitionsFor(t *testing.T) {
	t.Parallel()
	producerPartitionsFor(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaProducerOnFailure(t *testing.T) {
	t.Parallel()
	producerOnFailure(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaProducerRefusesTooLargeRecordBeforeSending(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) { producerRefusesTooLargeRecordBeforeSending(t, onKafka(t, o)) })
}

func TestKafkaProducerWithoutAcks(t *testing.T) {
	t.Parallel()
	producerWithoutAcks(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaProducerCompressionCodecs(t *testing.T) {
	t.Parallel()
	producerCompressionCodecs(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaTxnRecordsVisibleOnlyOnceCommitted(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) { txnRecordsVisibleOnlyOnceCommitted(t, onKafka(t, o)) })
}

func TestKafkaTxnRefusesRecordOutsideTransaction(t *testing.T) {
	t.Parallel()
	txnRefusesRecordOutsideTransaction(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaProducerLingerAndBatchSize(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) { producerLingerAndBatchSize(t, onKafka(t, o)) })
}

func TestKafkaProducerUnknownTopicFailsTheRecord(t *testing.T) {
	t.Parallel()
	producerUnknownTopicFailsTheRecord(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaProducerReusesAcknowledgedMessagesAcrossGC(t *testing.T) {
	t.Parallel()
	producerReusesAcknowledgedMessagesAcrossGC(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaTrackOffsetsAsksTrackOncePerSend(t *testing.T) {
	t.Parallel()
	trackOffsetsAsksTrackOncePerSend(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaProducerRecordsOfAnUnknownTopicHoldBufferRoom(t *testing.T) {
	t.Parallel()
	producerRecordsOfAnUnknownTopicHoldBufferRoom(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaProducerTopicLookupGivesUpAfterMaxBlock(t *testing.T) {
	t.Parallel()
	producerTopicLookupGivesUpAfterMaxBlock(t, onKafka(t, kafkatest.Options{}))
}

// Apache Kafka's own MESSAGE_TOO_LARGE for a batch over the topic's max.message.bytes.
func TestKafkaProducerSplitsBatchTooLarge(t *testing.T) {
	t.Parallel()
	producerSplitsBatchTooLarge(t, onKafka(t, kafkatest.Options{}))
}

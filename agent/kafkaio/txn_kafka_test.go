//go:build kafka

// The twins of txn_test.go on Apache Kafka 4.4, on both transaction protocols.

package kafkaio

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaTxnCommitAndAbort(t *testing.T) {
	bothTransactionVersions(t, func(t *testing.T, o kafkatest.Options) { txnCommitAndAbort(t, onKafka(t, o)) })
}

func TestKafkaTxnFenced(t *testing.T) {
	bothTransactionVersions(t, func(t *testing.T, o kafkatest.Options) { txnFenced(t, onKafkaInParallel(o)) })
}

func TestKafkaTxnRenewAfterFencing(t *testing.T) {
	bothTransactionVersions(t, func(t *testing.T, o kafkatest.Options) { txnRenewAfterFencing(t, onKafkaInParallel(o)) })
}

func TestKafkaAckedOffsetsTracksChosenTopics(t *testing.T) {
	bothTransactionVersions(t, func(t *testing.T, o kafkatest.Options) { ackedOffsetsTracksChosenTopics(t, onKafka(t, o)) })
}

func TestKafkaCommitTxnInGroupRefusesAStaleGeneration(t *testing.T) {
	bothTransactionVersions(t, func(t *testing.T, o kafkatest.Options) { commitTxnInGroupRefusesAStaleGeneration(t, onKafka(t, o)) })
}

func TestKafkaTxnCommittedOffsetsAreReadRightAfterTheCommit(t *testing.T) {
	bothTransactionVersions(t, func(t *testing.T, o kafkatest.Options) { txnCommittedOffsetsReadRightAfterTheCommit(t, onKafka(t, o)) })
}

//go:build kafka

// The twins of txn_test.go on Apache Kafka 4.4, on both transaction protocols.

package kafkaio

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaTxnCommitAndAbort(t *testing.T) { transactionalTwin(t, txnCommitAndAbort) }

func TestKafkaTxnFenced(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) { txnFenced(t, onKafkaInParallel(o)) })
}

func TestKafkaTxnRenewAfterFencing(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) { txnRenewAfterFencing(t, onKafkaInParallel(o)) })
}

func TestKafkaAckedOffsetsTracksChosenTopics(t *testing.T) {
	transactionalTwin(t, ackedOffsetsTracksChosenTopics)
}

func TestKafkaCommitTxnInGroupRefusesAStaleGeneration(t *testing.T) {
	transactionalTwin(t, commitTxnInGroupRefusesAStaleGeneration)
}

func TestKafkaTxnCommittedOffsetsAreReadRightAfterTheCommit(t *testing.T) {
	transactionalTwin(t, txnCommittedOffsetsReadRightAfterTheCommit)
}

// The producer speaks the transaction protocol before KIP-890 part 2 (sarama's request
// versions: EndTxn v3, no implicit AddPartitionsToTxn by Produce v12) on both clusters, so
// Kafka 4.4 runs its transactions as transaction.version 1 ones even where version 2 is
// finalized: the producer epoch stays the same from commit to commit (a version 2
// transaction bumps it at every EndTxn). docs/COMPATIBILITY.md, Brokers, says so.
func TestKafkaTransactionsKeepTheirEpochOnBothProtocols(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) {
		c := onKafka(t, o)
		out, id := kafkatest.Name(t, "epoch-out"), kafkatest.Name(t, "epoch")
		createTopic(t, c, out, 1)
		p := newTxnProducer(t, c, id)
		var epochs []int16
		for range 3 {
			if err := p.BeginTxn(); err != nil {
				t.Fatal(err)
			}
			sendValues(t, p, out, 0, "x")
			if err := p.CommitTxn(t.Context(), nil, ""); err != nil {
				t.Fatal(err)
			}
			epochs = append(epochs, describeEpoch(t, c, id))
		}
		if epochs[0] != epochs[1] || epochs[1] != epochs[2] {
			t.Fatalf("producer epochs after three commits: %v, want one epoch (transaction.version 1 transactions)", epochs)
		}
		want := int16(2)
		if o.TransactionVersion == 1 {
			want = 1
		}
		if v := c.Features(t)["transaction.version"]; v != want {
			t.Fatalf("the cluster's finalized transaction.version is %d, want %d", v, want)
		}
	})
}

// describeEpoch is the producer epoch of transactional id id as its coordinator describes it.
func describeEpoch(t *testing.T, c kafkaCluster, id string) int16 {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp := c.Request(t, c.TxnCoordinator(t, id), req).(*kmsg.DescribeTransactionsResponse)
	if len(resp.TransactionStates) != 1 || resp.TransactionStates[0].ErrorCode != 0 {
		t.Fatalf("describe transaction %s: %+v", id, resp)
	}
	return resp.TransactionStates[0].ProducerEpoch
}

func TestKafkaTxnCommitRefusesBadOffsets(t *testing.T) {
	twin(t, kafkatest.Options{}, txnCommitRefusesBadOffsets)
}

func TestKafkaTxnCallsOnPlainProducer(t *testing.T) {
	twin(t, kafkatest.Options{}, txnCallsOnPlainProducer)
}

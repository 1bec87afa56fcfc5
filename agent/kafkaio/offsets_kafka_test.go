//go:build kafka

package kafkaio

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// CommittedStable answers only once no open transaction commits offsets of the partitions
// (KIP-447): another producer's transaction, such as a killed Kafka Streams instance's, may
// still commit them, and the records before them. Committed does not wait.
func TestKafkaCommittedStableWaitsForOpenTransactions(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 1})
	topic, group := kafkatest.Name(t, "in"), kafkatest.Name(t, "group")
	c.CreateTopic(t, topic, 1, nil)
	tp := pipeline.TopicPartition{Topic: topic, Partition: 0}

	cons, err := NewConsumer(c.Bootstrap(), group, []string{topic}, testConfig(), 10, &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cons.Close(false) })

	// Another producer's transaction: a record and the group's offset of it, left open.
	txnName := kafkatest.Name(t, "txn")
	// TxnOffsetCommit names topics by name up to Kafka 3.9's versions, which kmsg fills in.
	txn := c.Client(t, kgo.TransactionalID(txnName), kgo.DefaultProduceTopic(topic), kgo.MaxVersions(kversion.V3_9_0()))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(t.Context(), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	id, epoch, err := txn.ProducerID(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = txnName, id, epoch, group
	addResp, err := add.RequestWith(t.Context(), txn)
	if err == nil {
		err = kerr.ErrorForCode(addResp.ErrorCode)
	}
	if err != nil {
		t.Fatalf("AddOffsetsToTxn: %v", err)
	}
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.TransactionalID, commit.ProducerID, commit.ProducerEpoch, commit.Group = txnName, id, epoch, group
	commit.Generation = -1
	ct := kmsg.NewTxnOffsetCommitRequestTopic()
	ct.Topic = topic
	cp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 0, 1
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	commitResp, err := commit.RequestWith(t.Context(), txn)
	if err == nil {
		err = kerr.ErrorForCode(commitResp.Topics[0].Partitions[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("TxnOffsetCommit: %v", err)
	}

	plain, err := cons.Committed([]pipeline.TopicPartition{tp})
	if err != nil || plain[tp] != -1 {
		t.Fatalf("Committed while the transaction is open: %v, %v; want -1 at once", plain, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	_, err = cons.CommittedStable(ctx, []pipeline.TopicPartition{tp})
	cancel()
	if !errors.Is(err, sarama.ErrUnstableOffsetCommit) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CommittedStable while the transaction is open: %v; want it to wait for the transaction", err)
	}

	done := make(chan struct{})
	var stable map[pipeline.TopicPartition]CommittedOffset
	go func() {
		defer close(done)
		stable, err = cons.CommittedStable(t.Context(), []pipeline.TopicPartition{tp})
	}()
	if err := txn.EndTransaction(t.Context(), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	<-done
	if err != nil || stable[tp].Offset != 1 {
		t.Fatalf("CommittedStable after the commit: %v, %v; want offset 1", stable, err)
	}
}

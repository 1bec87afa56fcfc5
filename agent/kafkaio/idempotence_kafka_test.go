//go:build kafka

package kafkaio

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// The idempotent producer, and the transactional one, keep
// writing while every partition's leader moves three times on the three-node cluster (a
// reassignment that rotates the replicas' order, then a preferred leader election; no node
// is stopped): the records in flight at each move are refused by the old leader
// (NOT_LEADER_OR_FOLLOWER) and sent again to the new one with their sequence numbers. Flush
// and every commit succeed (no OUT_OF_ORDER_SEQUENCE_NUMBER, no record given up), and each
// partition holds its records exactly once, in order, as a read_committed reader sees it.
func TestKafkaIdempotenceAcrossLeaderChanges(t *testing.T) {
	for _, transactional := range []bool{false, true} {
		t.Run(map[bool]string{false: "idempotent", true: "transactional"}[transactional], func(t *testing.T) {
			t.Parallel()
			idempotenceAcrossLeaderChanges(t, kafkatest.Start(t, kafkatest.Options{Nodes: 3}), transactional)
		})
	}
}

func idempotenceAcrossLeaderChanges(t *testing.T, c *kafkatest.Cluster, transactional bool) {
	const partitions = 3
	e := kafkaCluster{c}
	topic := kafkatest.Name(t, "moving")
	c.CreateTopic(t, topic, partitions, nil)
	cfg := idempotentConfig()
	if transactional {
		cfg = txnConfig(kafkatest.Name(t, "mover"))
	}
	// As the agent's producer: retries bounded by the delivery timeout, retry.backoff.ms.
	cfg.Producer.Retry.Max = 1000
	cfg.Producer.Retry.Backoff = 100 * time.Millisecond
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	p, err := NewProducer(e.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var mu sync.Mutex
	var failures []*ProduceError
	p.OnFailure = func(pe *ProduceError) bool {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, pe)
		return false
	}

	// The writer: record n of partition p has value n; a transaction every 200 records.
	ctx, stop := context.WithCancel(t.Context())
	sent := make([]int, partitions)
	var total atomic.Int64
	written := make(chan error, 1)
	go func() {
		written <- func() error {
			for i := 0; ; i++ {
				if transactional && i%200 == 0 {
					if i > 0 {
						if err := p.CommitTxn(context.Background(), nil, ""); err != nil {
							return err
						}
					}
					if err := p.BeginTxn(); err != nil {
						return err
					}
				}
				if ctx.Err() != nil {
					if transactional {
						return p.CommitTxn(context.Background(), nil, "")
					}
					return p.Flush(context.Background())
				}
				part := int32(i % partitions)
				if err := p.Send(topic, part, []byte("k"), []byte(strconv.Itoa(sent[part])), nil, int64(i), nil); err != nil {
					return err
				}
				sent[part]++
				total.Add(1)
			}
		}()
	}()

	// Records flow before each move and while it happens: requests are in flight when the
	// leaders change.
	for move := range 3 {
		eventually(t, 30*time.Second, "records sent before the move", func() bool { return total.Load() > int64(100*(move+1)) })
		before, start := total.Load(), time.Now()
		moveLeaders(t, c, topic, partitions)
		t.Logf("move %d: leaders %v in %v, %d records sent while they moved", move, leaders(t, c, topic, partitions), time.Since(start), total.Load()-before)
	}
	stop()
	if err := <-written; err != nil {
		t.Fatalf("writing while the leaders moved: %v", err)
	}
	if len(failures) > 0 {
		t.Fatalf("%d records failed, the first: %v", len(failures), failures[0])
	}
	for part := range int32(partitions) {
		waitStable(t, e, topic, part)
		if got := numbers(t, e, topic, part); !slices.Equal(got, sequence(0, sent[part])) {
			t.Fatalf("partition %d holds %d records for %d sent; want 0..%d once each, in order (first %v)",
				part, len(got), sent[part], sent[part]-1, got[:min(len(got), 10)])
		}
	}
	t.Logf("%v records per partition written across 3 leader moves", sent)
}

// moveLeaders rotates each partition's replica list by one (a reassignment that only changes
// the order, so no data moves) and elects the new preferred leaders, then waits until every
// partition is led by its new first replica.
func moveLeaders(t *testing.T, c *kafkatest.Cluster, topic string, partitions int32) {
	t.Helper()
	meta := c.Request(t, 1, metadataOf(topic)).(*kmsg.MetadataResponse)
	want := map[int32]int32{}
	alter := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	alter.TimeoutMillis = 30000
	at := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	at.Topic = topic
	for _, mt := range meta.Topics {
		for _, mp := range mt.Partitions {
			replicas := append(slices.Clone(mp.Replicas[1:]), mp.Replicas[0])
			ap := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			ap.Partition, ap.Replicas = mp.Partition, replicas
			at.Partitions = append(at.Partitions, ap)
			want[mp.Partition] = replicas[0]
		}
	}
	alter.Topics = append(alter.Topics, at)
	resp := c.Request(t, c.Controller(t), alter).(*kmsg.AlterPartitionAssignmentsResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("reassign %s: %v", topic, err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				t.Fatalf("reassign %s-%d: %v", topic, rp.Partition, err)
			}
		}
	}
	elect := kmsg.NewPtrElectLeadersRequest()
	elect.ElectionType = 0 // preferred
	elect.TimeoutMillis = 30000
	et := kmsg.NewElectLeadersRequestTopic()
	et.Topic = topic
	for p := range partitions {
		et.Partitions = append(et.Partitions, p)
	}
	elect.Topics = append(elect.Topics, et)
	deadline := time.Now().Add(time.Minute)
	for p, leader := range want {
		for c.Leader(t, topic, p) != int(leader) {
			// The reassignment may still be completing: elect again until it took.
			c.Request(t, c.Controller(t), elect)
			if time.Now().After(deadline) {
				t.Fatalf("%s-%d: leader %d, want %d after the election", topic, p, c.Leader(t, topic, p), leader)
			}
			time.Sleep(50 * time.Millisecond) // poll interval of the election
		}
	}
}

func leaders(t *testing.T, c *kafkatest.Cluster, topic string, partitions int32) []int {
	t.Helper()
	var out []int
	for p := range partitions {
		out = append(out, c.Leader(t, topic, p))
	}
	return out
}

func metadataOf(topic string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	return req
}

package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// txnConfig is a test config for a transactional producer with transactional id id.
func txnConfig(id string) *sarama.Config {
	cfg := testConfig()
	cfg.Producer.Transaction.ID = id
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Transaction.Retry.Backoff = 20 * time.Millisecond
	return cfg
}

func newTxnProducer(t *testing.T, e testCluster, id string) *Producer {
	t.Helper()
	p, err := NewProducer(e.Addrs(), txnConfig(id))
	if err != nil {
		t.Fatalf("NewProducer(transactional id %q): %v", id, err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// sendValues sends one record per value to partition p of topic.
func sendValues(t *testing.T, prod *Producer, topic string, p int32, values ...string) {
	t.Helper()
	for _, v := range values {
		if err := prod.Send(topic, p, []byte("k"), []byte(v), nil, 1, nil); err != nil {
			t.Fatalf("Send(%s): %v", v, err)
		}
	}
}

// readValues returns the values ReadToEnd delivers from partition p of topic.
func readValues(t *testing.T, e testCluster, topic string, p int32, from int64) (values []string, last int64) {
	t.Helper()
	last, err := newTopicReader(t, e.Addrs(), testConfig()).ReadToEnd(t.Context(), topic, p, from, func(msgs []pipeline.SourceRecord) error {
		for _, m := range msgs {
			values = append(values, fmt.Sprintf("%d:%s", m.Offset, m.Value))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("ReadToEnd(%s/%d from %d): %v", topic, p, from, err)
	}
	return values, last
}

// valuesAfterTheCommit is readValues once no transaction is open on the partition: Apache
// Kafka writes a commit's markers after EndTxn returns, and until then the last stable
// offset, where ReadToEnd stops, stays at the transaction's first record.
func valuesAfterTheCommit(t *testing.T, e testCluster, topic string, p int32, from int64) (values []string, last int64) {
	t.Helper()
	waitStable(t, e, topic, p)
	return readValues(t, e, topic, p, from)
}

// committedOffset is the offset of tp group committed, as a read_committed consumer (one
// under exactly-once) sees it.
func committedOffset(t *testing.T, e testCluster, group string, tp pipeline.TopicPartition) int64 {
	t.Helper()
	cfg := testConfig()
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	c := newTestConsumer(t, e, group, []string{tp.Topic}, cfg, &recorder{})
	got, err := c.Committed([]pipeline.TopicPartition{tp})
	if err != nil {
		t.Fatalf("Committed(%s): %v", group, err)
	}
	return got[tp]
}

func TestTxnCommitAndAbort(t *testing.T) {
	txnCommitAndAbort(t, startBroker(t))
}

func txnCommitAndAbort(t *testing.T, e testCluster) {
	inTopic, out, app := kafkatest.Name(t, "txn-in"), kafkatest.Name(t, "txn-out"), kafkatest.Name(t, "app")
	createTopic(t, e, inTopic, 1)
	createTopic(t, e, out, 2)
	in := pipeline.TopicPartition{Topic: inTopic, Partition: 0}
	p := newTxnProducer(t, e, kafkatest.Name(t, "app-1"))

	if err := p.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	sendValues(t, p, out, 0, "c1", "c2")
	sendValues(t, p, out, 1, "c3")
	if err := p.CommitTxn(t.Context(), map[pipeline.TopicPartition]int64{in: 3}, app); err != nil {
		t.Fatalf("CommitTxn: %v", err)
	}
	if got := committedOffset(t, e, app, in); got != 3 {
		t.Fatalf("after the commit the group's offset is %d, want 3", got)
	}

	if err := p.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	sendValues(t, p, out, 0, "a1", "a2")
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := p.AbortTxn(); err != nil {
		t.Fatalf("AbortTxn: %v", err)
	}
	if got := committedOffset(t, e, app, in); got != 3 {
		t.Fatalf("after the abort the group's offset is %d, want 3 (unmoved)", got)
	}

	// The producer goes on after an abort; with no offsets the commit is records only.
	if err := p.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	sendValues(t, p, out, 0, "c4")
	if err := p.CommitTxn(t.Context(), nil, ""); err != nil {
		t.Fatalf("CommitTxn after an abort: %v", err)
	}

	cfg := testConfig()
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	c := newTestConsumer(t, e, kafkatest.Name(t, "reader"), []string{out}, cfg, &recorder{})
	c.Start(t.Context())
	got := map[int32][]string{}
	for _, m := range receive(t, c, 4) {
		got[m.Partition] = append(got[m.Partition], string(m.Value))
	}
	// c4 comes after the aborted records: receiving it shows they were skipped.
	want := map[int32][]string{0: {"c1", "c2", "c4"}, 1: {"c3"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read_committed consumer got %v, want %v", got, want)
	}
}

// The offsets a transaction committed are what a read_committed consumer reads right after
// the commit returns, although the coordinator writes the commit's markers after it answers
// (Apache Kafka does, kfake not): the offsets before them would have an epoch after an abort
// start again below records the transaction's outputs covered.
func TestTxnCommittedOffsetsAreReadRightAfterTheCommit(t *testing.T) {
	txnCommittedOffsetsReadRightAfterTheCommit(t, startBroker(t))
}

func txnCommittedOffsetsReadRightAfterTheCommit(t *testing.T, e testCluster) {
	in, out, group := kafkatest.Name(t, "in"), kafkatest.Name(t, "out"), kafkatest.Name(t, "group")
	createTopic(t, e, in, 1)
	createTopic(t, e, out, 1)
	cfg := testConfig()
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	c := newTestConsumer(t, e, group, []string{in}, cfg, &recorder{})
	p := newTxnProducer(t, e, kafkatest.Name(t, "txn"))
	tp := pipeline.TopicPartition{Topic: in, Partition: 0}
	for i := int64(1); i <= 20; i++ {
		if err := p.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		sendValues(t, p, out, 0, "x")
		if err := p.CommitTxn(t.Context(), map[pipeline.TopicPartition]int64{tp: i}, group); err != nil {
			t.Fatal(err)
		}
		got, err := c.Committed([]pipeline.TopicPartition{tp})
		if err != nil {
			t.Fatal(err)
		}
		if got[tp] != i {
			t.Fatalf("commit %d: the group's offset read right after it is %d", i, got[tp])
		}
	}
}

func TestTxnCommitRefusesBadOffsets(t *testing.T) {
	txnCommitRefusesBadOffsets(t, startBroker(t))
}

func txnCommitRefusesBadOffsets(t *testing.T, e testCluster) {
	badOut, bad := kafkatest.Name(t, "bad-out"), kafkatest.Name(t, "bad")
	createTopic(t, e, badOut, 1)
	p := newTxnProducer(t, e, bad)
	if err := p.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	if err := p.CommitTxn(t.Context(), map[pipeline.TopicPartition]int64{{Topic: badOut, Partition: 0}: -1}, "g"); err == nil {
		t.Error("CommitTxn with a negative offset: want an error")
	}
	if err := p.CommitTxn(t.Context(), map[pipeline.TopicPartition]int64{{Topic: badOut, Partition: 0}: 1}, ""); err == nil {
		t.Error("CommitTxn with offsets and no group: want an error")
	}
	if err := p.AbortTxn(); err != nil {
		t.Fatalf("AbortTxn: %v", err)
	}
}

func TestTxnCallsOnPlainProducer(t *testing.T) {
	txnCallsOnPlainProducer(t, startBroker(t))
}

func txnCallsOnPlainProducer(t *testing.T, e testCluster) {
	p, err := NewProducer(e.Addrs(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.BeginTxn(); err == nil {
		t.Error("BeginTxn on a plain producer: want an error")
	}
	if err := p.CommitTxn(t.Context(), nil, ""); err == nil {
		t.Error("CommitTxn on a plain producer: want an error")
	}
	if err := p.AbortTxn(); err == nil {
		t.Error("AbortTxn on a plain producer: want an error")
	}
}

func TestNewProducerValidatesTransactionalConfig(t *testing.T) {
	cfg := txnConfig("txn")
	cfg.Producer.Idempotent = false
	_, err := NewProducer([]string{"127.0.0.1:1"}, cfg)
	if err == nil {
		t.Fatal("transactional id without idempotence: want an error")
	}
	var cerr sarama.ConfigurationError
	if !errors.As(err, &cerr) {
		t.Errorf("error %v: want sarama's configuration error, before any connection", err)
	}
}

func TestTxnFenced(t *testing.T) {
	txnFenced(t, func(t *testing.T) testCluster { return startBroker(t) })
}

// txnFenced runs its cases on the broker of each subtest.
func txnFenced(t *testing.T, broker func(t *testing.T) testCluster) {
	for _, tc := range []struct {
		name          string
		sendAfterward bool // the fenced producer sends again (its produce fails) or only commits
	}{
		{"produce", true},
		{"commit", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := broker(t)
			out, node := kafkatest.Name(t, "fence-out"), kafkatest.Name(t, "node")
			createTopic(t, e, out, 1)
			old := newTxnProducer(t, e, node)
			if err := old.BeginTxn(); err != nil {
				t.Fatal(err)
			}
			sendValues(t, old, out, 0, "old-1")
			if err := old.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}

			successor := newTxnProducer(t, e, node)
			if tc.sendAfterward {
				sendValues(t, old, out, 0, "old-2")
			}
			err := old.CommitTxn(t.Context(), nil, "")
			if err == nil {
				t.Fatal("CommitTxn of the fenced producer: want an error")
			}
			// A failed produce may say something else first (kfake answers
			// INVALID_TXN_STATE, Kafka INVALID_PRODUCER_EPOCH); the abort that
			// follows learns the truth from the coordinator.
			if !tc.sendAfterward && !errors.Is(err, ErrFenced) {
				t.Fatalf("CommitTxn of the fenced producer = %v, want ErrFenced", err)
			}
			if err := old.AbortTxn(); !errors.Is(err, ErrFenced) {
				t.Errorf("AbortTxn of the fenced producer = %v, want ErrFenced", err)
			}
			if err := old.BeginTxn(); !errors.Is(err, ErrFenced) {
				t.Errorf("BeginTxn of the fenced producer = %v, want ErrFenced", err)
			}

			if err := successor.BeginTxn(); err != nil {
				t.Fatal(err)
			}
			sendValues(t, successor, out, 0, "new-1")
			if err := successor.CommitTxn(t.Context(), nil, ""); err != nil {
				t.Fatalf("CommitTxn of the successor: %v", err)
			}
			values, _ := valuesAfterTheCommit(t, e, out, 0, 0)
			if len(values) != 1 || values[0][len(values[0])-5:] != "new-1" {
				t.Fatalf("committed records = %v, want only new-1", values)
			}
		})
	}
}

// A producer fenced by a transaction timeout (here: open longer than
// transaction.timeout.ms) or by another producer with its transactional id is usable
// again after Renew: nothing of the fenced transaction is ever committed, and what the
// renewed producer commits is.
func TestTxnRenewAfterFencing(t *testing.T) {
	txnRenewAfterFencing(t, func(t *testing.T) testCluster { return startBroker(t) })
}

// txnRenewAfterFencing runs its cases on the broker of each subtest.
func txnRenewAfterFencing(t *testing.T, broker func(t *testing.T) testCluster) {
	for _, by := range []string{"timeout", "successor"} {
		t.Run(by, func(t *testing.T) {
			e := broker(t)
			out, node := kafkatest.Name(t, "renew-out"), kafkatest.Name(t, "node")
			createTopic(t, e, out, 1)
			cfg := txnConfig(node)
			cfg.Producer.Transaction.Timeout = 300 * time.Millisecond
			p, err := NewProducer(e.Addrs(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Close() })
			if err := p.BeginTxn(); err != nil {
				t.Fatal(err)
			}
			sendValues(t, p, out, 0, "fenced-1")
			if err := p.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			if by == "timeout" {
				// The broker aborts the transaction once it is older than its timeout and
				// bumps the epoch; the abort marker moves the last stable offset past it.
				waitStable(t, e, out, 0)
			} else {
				newTxnProducer(t, e, node)
			}
			// A failed commit may say something else first; the abort learns the truth.
			if err := p.CommitTxn(t.Context(), nil, ""); !errors.Is(err, ErrFenced) {
				if aerr := p.AbortTxn(); !errors.Is(aerr, ErrFenced) {
					t.Fatalf("the producer was not fenced: commit %v, abort %v", err, aerr)
				}
			}
			if err := p.Renew(); err != nil {
				t.Fatalf("Renew: %v", err)
			}
			if err := p.BeginTxn(); err != nil {
				t.Fatalf("BeginTxn after Renew: %v", err)
			}
			sendValues(t, p, out, 0, "renewed-1")
			if err := p.CommitTxn(t.Context(), nil, ""); err != nil {
				t.Fatalf("CommitTxn after Renew: %v", err)
			}
			values, _ := valuesAfterTheCommit(t, e, out, 0, 0)
			var kept []string
			for _, v := range values {
				kept = append(kept, v[strings.Index(v, ":")+1:])
			}
			if !reflect.DeepEqual(kept, []string{"renewed-1"}) {
				t.Fatalf("committed records %v, want only renewed-1", values)
			}
		})
	}
}

func TestAckedOffsetsTracksChosenTopics(t *testing.T) {
	ackedOffsetsTracksChosenTopics(t, startBroker(t))
}

func ackedOffsetsTracksChosenTopics(t *testing.T, e testCluster) {
	changelog, out := kafkatest.Name(t, "app-store-changelog"), kafkatest.Name(t, "app-out")
	createTopic(t, e, changelog, 2)
	createTopic(t, e, out, 1)
	cl0, cl1 := pipeline.TopicPartition{Topic: changelog, Partition: 0}, pipeline.TopicPartition{Topic: changelog, Partition: 1}
	track := func(topic string) bool { return topic == changelog }

	t.Run("plain", func(t *testing.T) {
		p, err := NewProducer(e.Addrs(), testConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if got := p.AckedOffsets(); len(got) != 0 {
			t.Fatalf("AckedOffsets without tracking = %v, want none", got)
		}
		p.TrackOffsets(track)
		sendValues(t, p, changelog, 0, "a", "b", "c")
		sendValues(t, p, changelog, 1, "d", "e")
		sendValues(t, p, out, 0, "x", "y", "z", "w")
		if err := p.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got, want := p.AckedOffsets(), map[pipeline.TopicPartition]int64{cl0: 2, cl1: 1}; !reflect.DeepEqual(got, want) {
			t.Fatalf("AckedOffsets = %v, want %v", got, want)
		}
		if got := p.AckedOffsets(); len(got) != 0 {
			t.Fatalf("second AckedOffsets = %v, want none (cleared)", got)
		}
	})

	t.Run("transactional", func(t *testing.T) {
		p := newTxnProducer(t, e, kafkatest.Name(t, "tracker"))
		p.TrackOffsets(track)
		if err := p.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		sendValues(t, p, changelog, 0, "f", "g")
		sendValues(t, p, out, 0, "v")
		if err := p.CommitTxn(t.Context(), nil, ""); err != nil {
			t.Fatal(err)
		}
		// Offsets 3 and 4 follow the three plain records; 5 is the commit marker.
		if got, want := p.AckedOffsets(), map[pipeline.TopicPartition]int64{cl0: 4}; !reflect.DeepEqual(got, want) {
			t.Fatalf("AckedOffsets after a commit = %v, want %v", got, want)
		}

		if err := p.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		sendValues(t, p, changelog, 1, "h")
		if err := p.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := p.AbortTxn(); err != nil {
			t.Fatal(err)
		}
		if got := p.AckedOffsets(); len(got) != 0 {
			t.Fatalf("AckedOffsets after an abort = %v, want none: they point at aborted records", got)
		}

		if err := p.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		sendValues(t, p, changelog, 0, "i")
		if err := p.CommitTxn(t.Context(), nil, ""); err != nil {
			t.Fatal(err)
		}
		if got, want := p.AckedOffsets(), map[pipeline.TopicPartition]int64{cl0: 6}; !reflect.DeepEqual(got, want) {
			t.Fatalf("AckedOffsets after the next commit = %v, want %v", got, want)
		}
	})
}

// BenchmarkTxnProduce measures transactional production with a commit every 1,000
// records (Flush.Frequency 0, 16 B keys, 100 B values, 4 partitions).
func BenchmarkTxnProduce(b *testing.B) {
	e, err := StartEmbedded("127.0.0.1:0", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	if err := EnsureTopics(e.Addrs(), testConfig(), map[string]TopicSpec{"bench-txn": {Partitions: 4, ReplicationFactor: 1}}); err != nil {
		b.Fatal(err)
	}
	p, err := NewProducer(e.Addrs(), txnConfig("bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	const perTxn = 1000
	key, value := make([]byte, 16), make([]byte, 100)
	ctx := context.Background()
	if err := p.BeginTxn(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	start := time.Now()
	n := 0
	for ; b.Loop(); n++ {
		if err := p.Send("bench-txn", int32(n%4), key, value, nil, 1, nil); err != nil {
			b.Fatal(err)
		}
		if (n+1)%perTxn == 0 {
			if err := p.CommitTxn(ctx, nil, ""); err != nil {
				b.Fatal(err)
			}
			if err := p.BeginTxn(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := p.CommitTxn(ctx, nil, ""); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "records/s")
}

// waitStable waits until partition p of topic has no open transaction: its last stable
// offset reached its high-water mark.
func waitStable(t *testing.T, e testCluster, topic string, p int32) {
	t.Helper()
	cfg := testConfig()
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	client, err := sarama.NewClient(e.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		leader, err := client.Leader(topic, p)
		if err != nil {
			t.Fatal(err)
		}
		offsets := map[sarama.IsolationLevel]int64{}
		for _, level := range []sarama.IsolationLevel{sarama.ReadUncommitted, sarama.ReadCommitted} {
			req := sarama.NewOffsetRequest(cfg.Version)
			req.IsolationLevel = level
			req.AddBlock(topic, p, sarama.OffsetNewest, 1)
			resp, err := leader.GetAvailableOffsets(req)
			if err != nil {
				t.Fatal(err)
			}
			offsets[level] = resp.GetBlock(topic, p).Offset
		}
		if offsets[sarama.ReadCommitted] == offsets[sarama.ReadUncommitted] {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%d: last stable offset %d, high-water mark %d: the transaction stayed open", topic, p,
				offsets[sarama.ReadCommitted], offsets[sarama.ReadUncommitted])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// KIP-447: offsets committed in a transaction on behalf of a generation the group has left
// behind are refused, so a member paused past its session cannot commit an epoch that the
// member now owning the partitions processes too.
func TestCommitTxnInGroupRefusesAStaleGeneration(t *testing.T) {
	commitTxnInGroupRefusesAStaleGeneration(t, startBroker(t))
}

func commitTxnInGroupRefusesAStaleGeneration(t *testing.T, e testCluster) {
	in, out, group := kafkatest.Name(t, "in"), kafkatest.Name(t, "out"), kafkatest.Name(t, "g447")
	createTopic(t, e, in, 1)
	createTopic(t, e, out, 1)
	first := newTestConsumer(t, e, group, []string{in}, testConfig(), &recorder{})
	first.Start(context.Background())
	eventually(t, 30*time.Second, "the first member's generation", func() bool { return first.GroupMetadata().GenerationID >= 0 })
	stale := first.GroupMetadata()
	newTestConsumer(t, e, group, []string{in}, testConfig(), &recorder{}).Start(context.Background())
	eventually(t, 30*time.Second, "a new generation", func() bool { return first.GroupMetadata().GenerationID > stale.GenerationID })

	p := newTxnProducer(t, e, kafkatest.Name(t, "t447"))
	offsets := map[pipeline.TopicPartition]int64{{Topic: in, Partition: 0}: 1}
	commit := func(meta *sarama.ConsumerGroupMetadata) error {
		t.Helper()
		if err := p.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		sendValues(t, p, out, 0, "x")
		return p.CommitTxnInGroup(context.Background(), offsets, meta)
	}
	if err := commit(stale); err == nil {
		t.Fatal("offsets of a left-behind generation were committed")
	}
	if err := p.AbortTxn(); err != nil {
		t.Fatal(err)
	}
	if err := commit(first.GroupMetadata()); err != nil {
		t.Fatalf("offsets of the current generation: %v", err)
	}
}

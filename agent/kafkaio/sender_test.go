package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatflow/agent/internal/kfaketest"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// idempotentConfig is a test config for an idempotent producer.
func idempotentConfig() *sarama.Config {
	cfg := testConfig()
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Net.MaxOpenRequests = 1
	return cfg
}

// sendNumbered sends values from..from+n-1 to partition p of topic, each naming its
// source record, and flushes them.
func sendNumbered(t *testing.T, prod *Producer, topic string, p int32, from, n int) error {
	t.Helper()
	for i := from; i < from+n; i++ {
		src := &pipeline.SourceRecord{Topic: "in", Offset: int64(i)}
		if err := prod.Send(topic, p, []byte("k"), []byte(strconv.Itoa(i)), nil, int64(i), src); err != nil {
			t.Fatalf("Send(%d): %v", i, err)
		}
	}
	return prod.Flush(t.Context())
}

// numbers reads back the values of partition p of topic as numbers, in offset order.
func numbers(t *testing.T, e testCluster, topic string, p int32) []int {
	t.Helper()
	values, _ := readValues(t, e, topic, p, 0)
	out := make([]int, len(values))
	for i, v := range values {
		n, err := strconv.Atoi(v[strings.Index(v, ":")+1:])
		if err != nil {
			t.Fatal(err)
		}
		out[i] = n
	}
	return out
}

func sequence(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}

// Records sent while a request is in flight gather into the next one: many records go out
// in a few requests, not one request (and several goroutine hand-offs) per record.
func TestProducerBatchesRecordsSentWhileARequestIsInFlight(t *testing.T) {
	e := startBroker(t)
	createTopic(t, e, "batched", 4)
	produces := e.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Observe: true, Count: -1})
	defer produces.Remove()
	p, err := NewProducer(e.Addrs(), idempotentConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const n = 20_000
	for i := range n {
		if err := p.Send("batched", int32(i%4), nil, []byte("v"), nil, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if hw := highWatermarks(t, e, "batched"); hw[0]+hw[1]+hw[2]+hw[3] != n {
		t.Fatalf("broker holds %v records, want %d", hw, n)
	}
	// sarama's AsyncProducer took 54 to 224 requests here.
	if got := produces.Hits(); got > n/500 {
		t.Fatalf("%d records went out in %d produce requests, want at most %d", n, got, n/500)
	}
}

// A batch the broker answers NOT_LEADER_OR_FOLLOWER is sent again after the metadata is
// refreshed, with its sequence: nothing is lost, duplicated or reordered.
func TestProducerRetryKeepsOrder(t *testing.T) {
	e := startBroker(t)
	createTopic(t, e, "retried", 1)
	notLeader := e.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "retried", Err: kerr.NotLeaderForPartition, Count: 3})
	defer notLeader.Remove()
	p, err := NewProducer(e.Addrs(), idempotentConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := sendNumbered(t, p, "retried", 0, 0, 5000); err != nil {
		t.Fatalf("Flush after retried batches: %v", err)
	}
	if notLeader.Hits() != 3 {
		t.Fatalf("%d produce requests refused, want 3", notLeader.Hits())
	}
	if got := numbers(t, e, "retried", 0); !slices.Equal(got, sequence(0, 5000)) {
		t.Fatalf("the partition holds %d records, want 0..4999 in order (first %v)", len(got), got[:min(len(got), 10)])
	}
}

// A batch that fails with a retriable error on every try fails after Producer.Retry.Max
// retries, each record as a ProduceError with its source.
func TestProducerRetriesRunOut(t *testing.T) {
	e := startBroker(t)
	createTopic(t, e, "unavailable", 1)
	refused := e.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "unavailable", Err: kerr.NotEnoughReplicas, Count: -1})
	defer refused.Remove()
	cfg := testConfig()
	cfg.Producer.Retry.Max = 2
	p, err := NewProducer(e.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var failed []*ProduceError
	p.OnFailure = func(pe *ProduceError) bool { failed = append(failed, pe); return false }
	err = sendNumbered(t, p, "unavailable", 0, 0, 3)
	var pe *ProduceError
	if !errors.As(err, &pe) || !errors.Is(err, sarama.ErrNotEnoughReplicas) || !pe.Retriable() {
		t.Fatalf("Flush = %v, want the retriable refusal", err)
	}
	if refused.Hits() != 3 {
		t.Fatalf("%d produce requests, want 3 (one and two retries)", refused.Hits())
	}
	if len(failed) != 3 {
		t.Fatalf("OnFailure saw %d records, want 3", len(failed))
	}
	for i, pe := range failed {
		if pe.Source == nil || pe.Source.Offset != int64(i) || string(pe.Value) != strconv.Itoa(i) {
			t.Fatalf("failure %d: %+v", i, pe)
		}
	}
}

// DUPLICATE_SEQUENCE_NUMBER says the broker has the batch from an earlier try: it is a
// success, without an offset to track. (Here the broker only says so: it did not write
// the record, so the producer's next sequence would be out of order.)
func TestProducerDuplicateSequenceIsSuccess(t *testing.T) {
	e := startBroker(t)
	createTopic(t, e, "dup", 1)
	dup := e.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "dup", Err: kerr.DuplicateSequenceNumber})
	defer dup.Remove()
	p, err := NewProducer(e.Addrs(), idempotentConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var acks atomic.Int64
	p.OnAck = func(string) { acks.Add(1) }
	p.TrackOffsets(func(string) bool { return true })
	if err := sendNumbered(t, p, "dup", 0, 0, 1); err != nil {
		t.Fatalf("Flush after a duplicate: %v", err)
	}
	if acks.Load() != 1 || len(p.AckedOffsets()) != 0 {
		t.Fatalf("%d acknowledgements, offsets %v; want 1 and none", acks.Load(), p.AckedOffsets())
	}
}

// A non-retriable error fails every record of the batch at once, each with its source.
func TestProducerNonRetriableErrorFailsEachRecord(t *testing.T) {
	e := startBroker(t)
	createTopic(t, e, "invalid", 1)
	release, held := kfaketest.HoldProduce(e.cluster, "invalid")
	invalid := e.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "invalid", Err: kerr.InvalidRecord, Count: -1})
	defer invalid.Remove()
	p, err := NewProducer(e.Addrs(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sources := map[int64]bool{}
	p.OnFailure = func(pe *ProduceError) bool { sources[pe.Source.Offset] = true; return true }
	for i := range 10 {
		if i == 1 {
			<-held // the first record's request is held: the others gather in one batch
			release()
		}
		src := &pipeline.SourceRecord{Topic: "in", Offset: int64(i)}
		if err := p.Send("invalid", 0, nil, []byte("v"), nil, 1, src); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(t.Context()); err != nil {
		t.Fatalf("Flush after consumed failures: %v", err)
	}
	if len(sources) != 10 || invalid.Hits() > 3 {
		t.Fatalf("failures of sources %v in %d requests, want 10 sources in at most 3 requests, no retry", sources, invalid.Hits())
	}
}

// OUT_OF_ORDER_SEQUENCE_NUMBER fails the batch; the idempotent producer then takes a new
// producer id, so that its next records are not refused for the gap.
func TestProducerOutOfOrderSequenceStartsAfresh(t *testing.T) {
	e := startBroker(t)
	createTopic(t, e, "ooo", 1)
	ooo := e.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "ooo", Err: kerr.OutOfOrderSequenceNumber})
	defer ooo.Remove()
	p, err := NewProducer(e.Addrs(), idempotentConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := sendNumbered(t, p, "ooo", 0, 0, 1); !errors.Is(err, sarama.ErrOutOfOrderSequenceNumber) {
		t.Fatalf("Flush = %v, want the out-of-order refusal", err)
	}
	if err := sendNumbered(t, p, "ooo", 0, 1, 3); err != nil {
		t.Fatalf("Flush of the records after: %v", err)
	}
	if got := numbers(t, e, "ooo", 0); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("the partition holds %v, want 1 2 3", got)
	}
}

// With acks=0 the broker answers nothing: the records count as acknowledged once sent.
func TestProducerWithoutAcks(t *testing.T) {
	producerWithoutAcks(t, startBroker(t))
}

func producerWithoutAcks(t *testing.T, e testCluster) {
	unacked := kafkatest.Name(t, "unacked")
	createTopic(t, e, unacked, 1)
	cfg := testConfig()
	cfg.Producer.RequiredAcks = sarama.NoResponse
	p, err := NewProducer(e.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := sendNumbered(t, p, unacked, 0, 0, 100); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the records in the partition", func() bool { return highWatermarks(t, e, unacked)[0] == 100 })
}

// Every codec's batches read back, with headers, timestamps, null keys and tombstones.
func TestProducerCompressionCodecs(t *testing.T) {
	producerCompressionCodecs(t, startBroker(t))
}

func producerCompressionCodecs(t *testing.T, e testCluster) {
	for _, codec := range []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP,
		sarama.CompressionSnappy, sarama.CompressionLZ4, sarama.CompressionZSTD} {
		t.Run(codec.String(), func(t *testing.T) {
			topic := kafkatest.Name(t, "codec")
			createTopic(t, e, topic, 1)
			cfg := testConfig()
			cfg.Producer.Compression = codec
			p, err := NewProducer(e.Addrs(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			headers := pipeline.Headers{{Key: "h1", Value: []byte("one")}, {Key: "h2", Value: nil}}
			for i := range 50 {
				if err := p.Send(topic, 0, fmt.Appendf(nil, "key-%d", i), []byte(strings.Repeat("v", i)), headers, int64(1000+i), nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.Send(topic, 0, nil, nil, nil, -1, nil); err != nil {
				t.Fatal(err)
			}
			if err := p.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			var got []pipeline.SourceRecord
			_, err = newTopicReader(t, e.Addrs(), testConfig()).ReadToEnd(t.Context(), topic, 0, 0, func(msgs []pipeline.SourceRecord) error {
				got = append(got, msgs...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 51 {
				t.Fatalf("read %d records, want 51", len(got))
			}
			for i, r := range got[:50] {
				if string(r.Key) != fmt.Sprintf("key-%d", i) || string(r.Value) != strings.Repeat("v", i) || r.Timestamp != int64(1000+i) ||
					len(r.Headers) != 2 || r.Headers[0].Key != "h1" || string(r.Headers[0].Value) != "one" || r.Headers[1].Key != "h2" {
					t.Fatalf("record %d read back as %+v", i, r)
				}
			}
			if last := got[50]; last.Key != nil || last.Value != nil || time.Since(time.UnixMilli(last.Timestamp)) > time.Minute {
				t.Fatalf("the tombstone read back as %+v", last)
			}
		})
	}
}

// Send waits while the unacknowledged records fill the buffer bound, and goes on once they
// are acknowledged.
func TestProducerSendWaitsForBufferRoom(t *testing.T) {
	e := startBroker(t)
	createTopic(t, e, "bounded", 1)
	release, held := kfaketest.HoldProduce(e.cluster, "bounded")
	p, err := NewProducer(e.Addrs(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.maxBuffered = 10 * (msgOverhead + recordSize(nil, []byte("v"), nil))
	for range 10 {
		if err := p.Send("bounded", 0, nil, []byte("v"), nil, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	<-held
	sent := make(chan error)
	go func() { sent <- p.Send("bounded", 0, nil, []byte("v"), nil, 1, nil) }()
	select {
	case err := <-sent:
		t.Fatalf("Send past the buffer bound returned %v while nothing was acknowledged", err)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if hw := highWatermarks(t, e, "bounded"); hw[0] != 11 {
		t.Fatalf("broker holds %v records, want 11", hw)
	}
}

// A transaction's records are invisible to read_committed readers until it commits, and
// never visible once it aborted.
func TestTxnRecordsVisibleOnlyOnceCommitted(t *testing.T) {
	txnRecordsVisibleOnlyOnceCommitted(t, startBroker(t))
}

func txnRecordsVisibleOnlyOnceCommitted(t *testing.T, e testCluster) {
	visible, visible1, visibleReader := kafkatest.Name(t, "visible"), kafkatest.Name(t, "visible-1"), kafkatest.Name(t, "visible-reader")
	createTopic(t, e, visible, 1)
	p := newTxnProducer(t, e, visible1)
	if err := p.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	sendValues(t, p, visible, 0, "a", "b")
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if committed, all := stableOffsets(t, e, visible, 0); committed != 0 || all != 2 {
		t.Fatalf("before the commit: last stable offset %d, high-water mark %d; want 0 and 2", committed, all)
	}
	if err := p.CommitTxn(t.Context(), nil, ""); err != nil {
		t.Fatal(err)
	}
	if err := p.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	sendValues(t, p, visible, 0, "aborted")
	if err := p.AbortTxn(); err != nil {
		t.Fatal(err)
	}
	if err := p.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	sendValues(t, p, visible, 0, "c")
	if err := p.CommitTxn(t.Context(), nil, ""); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	c := newTestConsumer(t, e, visibleReader, []string{visible}, cfg, &recorder{})
	c.Start(t.Context())
	var got []string
	for _, m := range receive(t, c, 3) {
		got = append(got, string(m.Value))
	}
	if !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("read_committed reader got %v, want a b c", got)
	}
}

// stableOffsets returns the last stable offset and the high-water mark of a partition.
func stableOffsets(t *testing.T, e testCluster, topic string, p int32) (committed, all int64) {
	t.Helper()
	client, err := sarama.NewClient(e.Addrs(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	leader, err := client.Leader(topic, p)
	if err != nil {
		t.Fatal(err)
	}
	offset := func(level sarama.IsolationLevel) int64 {
		req := sarama.NewOffsetRequest(testConfig().Version)
		req.IsolationLevel = level
		req.AddBlock(topic, p, sarama.OffsetNewest, 1)
		resp, err := leader.GetAvailableOffsets(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetBlock(topic, p).Offset
	}
	return offset(sarama.ReadCommitted), offset(sarama.ReadUncommitted)
}

// A transactional producer refuses a record sent outside a transaction.
func TestTxnRefusesRecordOutsideTransaction(t *testing.T) {
	txnRefusesRecordOutsideTransaction(t, startBroker(t))
}

func txnRefusesRecordOutsideTransaction(t *testing.T, e testCluster) {
	outside, outside1 := kafkatest.Name(t, "outside"), kafkatest.Name(t, "outside-1")
	createTopic(t, e, outside, 1)
	p := newTxnProducer(t, e, outside1)
	err := p.Send(outside, 0, nil, []byte("v"), nil, 1, nil)
	var pe *ProduceError
	if !errors.As(err, &pe) || !pe.Unsent {
		t.Fatalf("Send outside a transaction = %v, want an unsent ProduceError", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// A batch lingers until linger.ms, unless it reaches Flush.Bytes (batch.size) first; a
// commit sends a lingering batch at once instead of waiting.
func TestProducerLingerAndBatchSize(t *testing.T) {
	producerLingerAndBatchSize(t, startBroker(t))
}

func producerLingerAndBatchSize(t *testing.T, e testCluster) {
	lingering, lingering1 := kafkatest.Name(t, "lingering"), kafkatest.Name(t, "lingering-1")
	createTopic(t, e, lingering, 1)
	const linger = 30 * time.Second // far beyond the test's waits: only a full batch or a commit sends
	cfg := testConfig()
	cfg.Producer.Flush.Frequency = linger
	cfg.Producer.Flush.Bytes = 1000
	p, err := NewProducer(e.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	// Exactly as many records as take the batch to batch.size: the last one makes it ready.
	// (More could leave a few in the next batch, lingering, when the sender takes the full
	// one before the rest are sent.)
	size := recordSize(nil, make([]byte, 100), nil)
	for range (cfg.Producer.Flush.Bytes + size - 1) / size {
		if err := p.Send(lingering, 0, nil, make([]byte, 100), nil, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("Flush of a batch past batch.size: %v", err)
	}

	cfg = txnConfig(lingering1)
	cfg.Producer.Flush.Frequency = linger
	tp, err := NewProducer(e.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	if err := tp.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	sendValues(t, tp, lingering, 0, "small")
	if err := tp.CommitTxn(ctx, nil, ""); err != nil {
		t.Fatalf("CommitTxn of a lingering batch: %v", err)
	}
}

// OnAck and OnFailure calls never overlap, though each broker has its own sender: a
// callback needs no lock (the race detector watches the plain counter).
func TestProducerCallbacksDoNotOverlap(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(2), kfake.SeedTopics(1, "one", "two"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.MoveTopicPartition("two", 0, 1-c.LeaderFor("one", 0)); err != nil {
		t.Fatal(err)
	}
	p, err := NewProducer(c.ListenAddrs(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	acks := 0
	p.OnAck = func(string) { acks++ }
	for i := range 2000 {
		topic := []string{"one", "two"}[i%2]
		if err := p.Send(topic, 0, nil, []byte("v"), nil, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if acks != 2000 {
		t.Fatalf("OnAck called %d times, want 2000", acks)
	}
}

// A record for a topic the cluster does not know fails as a retriable ProduceError, like
// one the broker refused: Send takes it, Flush and its epoch report it.
func TestProducerUnknownTopicFailsTheRecord(t *testing.T) {
	producerUnknownTopicFailsTheRecord(t, startBroker(t))
}

func producerUnknownTopicFailsTheRecord(t *testing.T, e testCluster) {
	nowhere := kafkatest.Name(t, "nowhere")
	cfg := testConfig()
	cfg.Metadata.Retry.Max = 1
	p, err := NewProducer(e.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	src := &pipeline.SourceRecord{Topic: "in", Offset: 4}
	if err := p.Send(nowhere, -1, nil, []byte("v"), nil, 1, src); err != nil {
		t.Fatalf("Send to an unknown topic = %v, want the failure reported afterwards", err)
	}
	var pe *ProduceError
	if err := p.Seal().Wait(t.Context()); !errors.As(err, &pe) || pe.Unsent || !pe.Retriable() || pe.Source != src ||
		!errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		t.Fatalf("the epoch's error = %v, want a retriable, sent ProduceError naming its source", err)
	}
	if err := p.Flush(t.Context()); !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		t.Fatalf("Flush = %v, want the unknown topic", err)
	}
}

// Records waiting for their topic's partition count hold buffer room as batched ones do:
// while the lookup takes its time, Send waits instead of piling records up without bound.
func TestProducerRecordsOfAnUnknownTopicHoldBufferRoom(t *testing.T) {
	producerRecordsOfAnUnknownTopicHoldBufferRoom(t, startBroker(t))
}

func producerRecordsOfAnUnknownTopicHoldBufferRoom(t *testing.T, e testCluster) {
	nowhere := kafkatest.Name(t, "nowhere")
	cfg := testConfig()
	// The lookup of a topic the cluster lacks answers after its retries: ~400 ms.
	cfg.Metadata.Retry.Max = 2
	cfg.Metadata.Retry.Backoff = 200 * time.Millisecond
	p, err := NewProducer(e.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var failures atomic.Int32
	p.OnFailure = func(*ProduceError) bool { failures.Add(1); return true }
	p.maxBuffered = 3 * (msgOverhead + recordSize(nil, []byte("v"), nil))
	for range 3 {
		if err := p.Send(nowhere, -1, nil, []byte("v"), nil, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Send(nowhere, -1, nil, []byte("v"), nil, 1, nil); err != nil {
		t.Fatal(err)
	}
	if n := failures.Load(); n < 3 {
		t.Fatalf("a Send past the buffer bound returned while the lookup still held %d records", 3-n)
	}
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := failures.Load(); n != 4 {
		t.Fatalf("%d records failed, want 4", n)
	}
}

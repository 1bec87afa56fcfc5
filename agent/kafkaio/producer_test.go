package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// highWatermarks returns the high-water mark of each partition of topic.
func highWatermarks(t *testing.T, e testCluster, topic string) []int64 {
	t.Helper()
	client, err := sarama.NewClient(e.Addrs(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	parts, err := client.Partitions(topic)
	if err != nil {
		t.Fatal(err)
	}
	hw := make([]int64, len(parts))
	for _, p := range parts {
		if hw[p], err = client.GetOffset(topic, p, sarama.OffsetNewest); err != nil {
			t.Fatal(err)
		}
	}
	return hw
}

func TestProducerExplicitPartition(t *testing.T) {
	producerExplicitPartition(t, startBroker(t))
}

func producerExplicitPartition(t *testing.T, e testCluster) {
	explicit := kafkatest.Name(t, "explicit")
	createTopic(t, e, explicit, 3)
	p, err := NewProducer(e.Addrs(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// Same key, different requested partitions: the request wins over the hash.
	for range 5 {
		if err := p.Send(explicit, 2, []byte("k"), []byte("v"), nil, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Send(explicit, 0, []byte("k"), []byte("v"), nil, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if hw := highWatermarks(t, e, explicit); fmt.Sprint(hw) != "[1 0 5]" {
		t.Errorf("high watermarks = %v, want [1 0 5]", hw)
	}
}

func TestProducerKeyHashIsMurmur2(t *testing.T) {
	producerKeyHashIsMurmur2(t, startBroker(t))
}

func producerKeyHashIsMurmur2(t *testing.T, e testCluster) {
	hashed := kafkatest.Name(t, "hashed")
	createTopic(t, e, hashed, 5)
	p, err := NewProducer(e.Addrs(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	want := make([]int64, 5)
	for i := range 50 {
		key := fmt.Appendf(nil, "user-%d", i)
		want[pipeline.DefaultPartition(key, 5)]++
		if err := p.Send(hashed, -1, key, []byte("v"), nil, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Unkeyed records go anywhere; count them apart.
	for range 10 {
		if err := p.Send(hashed, -1, nil, []byte("v"), nil, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := highWatermarks(t, e, hashed)
	var total int64
	for i := range got {
		total += got[i]
		if got[i] < want[i] {
			t.Errorf("partition %d holds %d records, want at least the %d keys murmur2 puts there", i, got[i], want[i])
		}
	}
	if total != 60 {
		t.Errorf("total records = %d, want 60", total)
	}

	// A record on its own shows the exact placement.
	hw := highWatermarks(t, e, hashed)
	key := []byte("lone-key")
	if err := p.Send(hashed, -1, key, nil, nil, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	after := highWatermarks(t, e, hashed)
	part := pipeline.DefaultPartition(key, 5)
	if after[part] != hw[part]+1 {
		t.Errorf("lone-key: high watermarks %v → %v, want partition %d to grow by one", hw, after, part)
	}
}

func TestProducerFlushWaitsForAcks(t *testing.T) {
	producerFlushWaitsForAcks(t, startBroker(t))
}

func producerFlushWaitsForAcks(t *testing.T, e testCluster) {
	acked := kafkatest.Name(t, "acked")
	createTopic(t, e, acked, 2)
	cfg := testConfig()
	// Hold records in sarama long enough that an early Flush would see them unacknowledged.
	cfg.Producer.Flush.Frequency = 200 * time.Millisecond
	cfg.Producer.Flush.Messages = 1_000_000
	p, err := NewProducer(e.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var acks atomic.Int64
	p.OnAck = func(topic string) {
		if topic == acked {
			acks.Add(1)
		}
	}
	const n = 1000
	for i := range n {
		if err := p.Send(acked, int32(i%2), nil, []byte("v"), nil, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := acks.Load(); got != n {
		t.Fatalf("Flush returned with %d of %d records acknowledged", got, n)
	}
	if hw := highWatermarks(t, e, acked); hw[0]+hw[1] != n {
		t.Fatalf("broker holds %v records, want %d", hw, n)
	}
	// Nothing pending: Flush returns at once.
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestProducerFlushHonoursContext(t *testing.T) {
	e := startBroker(t)
	createTopic(t, e, "held", 1)
	cfg := testConfig()
	// sarama holds the record until the frequency elapses, Close included.
	cfg.Producer.Flush.Frequency = 500 * time.Millisecond
	cfg.Producer.Flush.Messages = 1_000_000
	p, err := NewProducer(e.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Send("held", 0, nil, []byte("v"), nil, 1, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := p.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush with a held record = %v, want deadline exceeded", err)
	}
	// Close still delivers what is held.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if hw := highWatermarks(t, e, "held"); hw[0] != 1 {
		t.Fatalf("after Close the broker holds %v records, want 1", hw)
	}
	if err := p.Send("held", 0, nil, nil, nil, 1, nil); err == nil {
		t.Fatal("Send after Close: want an error")
	}
}

func TestProducerStickyErrorAfterBrokerFailure(t *testing.T) {
	e := startBroker(t)
	createTopic(t, e, "doomed", 1)
	cfg := testConfig()
	cfg.Producer.Retry.Max = 1
	cfg.Metadata.Retry.Max = 1
	cfg.Net.DialTimeout = 200 * time.Millisecond
	p, err := NewProducer(e.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Send("doomed", 0, nil, []byte("ok"), nil, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}

	e.Close()
	var sendErr error
	eventually(t, 30*time.Second, "Send to report the broker failure", func() bool {
		sendErr = p.Send("doomed", 0, nil, []byte("lost"), nil, 1, nil)
		return sendErr != nil
	})
	// The error stays until Flush hands it over, then it is cleared.
	if err := p.Send("doomed", 0, nil, []byte("lost"), nil, 1, nil); err == nil || err.Error() != sendErr.Error() {
		t.Fatalf("second Send = %v, want the same sticky error %v", err, sendErr)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := p.Flush(ctx); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush after the failure = %v, want the produce error", err)
	}
}

func TestProducerPartitionsFor(t *testing.T) {
	producerPartitionsFor(t, startBroker(t))
}

func producerPartitionsFor(t *testing.T, e testCluster) {
	six, absent := kafkatest.Name(t, "six"), kafkatest.Name(t, "absent")
	createTopic(t, e, six, 6)
	p, err := NewProducer(e.Addrs(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for range 2 { // the second answer comes from the cache
		n, err := p.PartitionsFor(six)
		if err != nil || n != 6 {
			t.Fatalf("PartitionsFor(six) = %d, %v; want 6", n, err)
		}
	}
	if _, err := p.PartitionsFor(absent); err == nil {
		t.Fatal("PartitionsFor(absent): want an error")
	}
}

// BenchmarkProducerSend measures the per-record cost of Send and its acknowledgement.
func BenchmarkProducerSend(b *testing.B) {
	e, err := StartEmbedded("127.0.0.1:0", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	if err := EnsureTopics(e.Addrs(), testConfig(), map[string]TopicSpec{"bench": {Partitions: 4, ReplicationFactor: 1}}); err != nil {
		b.Fatal(err)
	}
	p, err := NewProducer(e.Addrs(), testConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	key, value := make([]byte, 16), make([]byte, 100)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := p.Send("bench", int32(i%4), key, value, nil, 1, nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// OnFailure sees a record the broker refused with its bytes and source; when it consumes
// the failure Flush reports nothing, and when it does not Flush reports it, naming the
// source record.
func TestProducerOnFailure(t *testing.T) {
	producerOnFailure(t, startBroker(t))
}

func producerOnFailure(t *testing.T, e testCluster) {
	small := kafkatest.Name(t, "small")
	limit := "1000"
	if err := EnsureTopics(e.Addrs(), testConfig(), map[string]TopicSpec{
		small: {Partitions: 1, ReplicationFactor: -1, Configs: map[string]*string{"max.message.bytes": &limit}},
	}); err != nil {
		t.Fatal(err)
	}
	for _, consume := range []bool{true, false} {
		p, err := NewProducer(e.Addrs(), testConfig())
		if err != nil {
			t.Fatal(err)
		}
		var seen atomic.Pointer[ProduceError]
		p.OnFailure = func(pe *ProduceError) bool { seen.Store(pe); return consume }
		src := &pipeline.SourceRecord{Topic: "in", Partition: 1, Offset: 7}
		big := make([]byte, 5000)
		if err := p.Send(small, 0, []byte("k"), big, nil, 1, src); err != nil {
			t.Fatal(err)
		}
		err = p.Flush(t.Context())
		pe := seen.Load()
		if pe == nil || pe.Source != src || string(pe.Key) != "k" || len(pe.Value) != len(big) || pe.Retriable() {
			t.Fatalf("consume=%v: OnFailure saw %+v", consume, pe)
		}
		if consume && err != nil {
			t.Fatalf("Flush after a consumed failure: %v", err)
		}
		if !consume && (err == nil || !errors.As(err, new(*ProduceError)) || !strings.Contains(err.Error(), "from record in-1@7")) {
			t.Fatalf("Flush after an unconsumed failure: %v", err)
		}
		if err := p.Send(small, 0, []byte("k"), []byte("ok"), nil, 1, nil); err != nil {
			t.Fatal(err)
		}
		if err := p.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		_ = p.Close()
	}
	if hw := highWatermarks(t, e, small); hw[0] != 2 {
		t.Fatalf("high watermark %v, want the two small records", hw)
	}
}

// A record over max.request.size is refused by Send itself, before sarama sees it: inside a
// transaction nothing else is harmed, and the transaction still commits what else was sent.
func TestProducerRefusesTooLargeRecordBeforeSending(t *testing.T) {
	producerRefusesTooLargeRecordBeforeSending(t, startBroker(t))
}

func producerRefusesTooLargeRecordBeforeSending(t *testing.T, e testCluster) {
	sized, sized1 := kafkatest.Name(t, "sized"), kafkatest.Name(t, "sized-1")
	createTopic(t, e, sized, 1)
	cfg := txnConfig(sized1)
	cfg.Producer.MaxMessageBytes = 1000
	p, err := NewProducer(e.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	sendValues(t, p, sized, 0, "before")
	src := &pipeline.SourceRecord{Topic: "in", Partition: 2, Offset: 9}
	err = p.Send(sized, 0, []byte("k"), make([]byte, 5000), nil, 1, src)
	var pe *ProduceError
	if !errors.As(err, &pe) || !pe.Unsent || pe.Source != src || pe.Retriable() || !errors.Is(err, ErrRecordTooLarge) ||
		!strings.Contains(err.Error(), "max.request.size is 1000") {
		t.Fatalf("Send of 5000 bytes: %v (%+v)", err, pe)
	}
	sendValues(t, p, sized, 0, "after")
	if err := p.CommitTxn(t.Context(), nil, ""); err != nil {
		t.Fatalf("CommitTxn after a refused record: %v", err)
	}
	if got, _ := valuesAfterTheCommit(t, e, sized, 0, 0); !slices.Equal(got, []string{"0:before", "1:after"}) {
		t.Fatalf("committed %v, want before and after", got)
	}
}

// Acknowledged messages come back to the sender for its next records, across garbage
// collections too: a warm producer allocates no message per record.
func TestProducerReusesAcknowledgedMessagesAcrossGC(t *testing.T) {
	producerReusesAcknowledgedMessagesAcrossGC(t, startBroker(t))
}

func producerReusesAcknowledgedMessagesAcrossGC(t *testing.T, e testCluster) {
	reused := kafkatest.Name(t, "reused")
	createTopic(t, e, reused, 1)
	p, err := NewProducer(e.Addrs(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// sendBatch sends one recycled batch and returns the messages handed back.
	sendBatch := func() map[*outMsg]bool {
		for range recycleBatch {
			if err := p.Send(reused, 0, []byte("k"), []byte("v"), nil, 1, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		p.msgs.mu.Lock()
		defer p.msgs.mu.Unlock()
		back := map[*outMsg]bool{}
		for _, m := range p.msgs.back {
			back[m] = true
		}
		return back
	}
	first := sendBatch()
	if len(first) != recycleBatch {
		t.Fatalf("%d messages handed back after %d acknowledgements", len(first), recycleBatch)
	}
	runtime.GC()
	runtime.GC()
	if second := sendBatch(); !maps.Equal(first, second) {
		t.Fatal("the records after a GC did not reuse the acknowledged messages")
	}
}

// TrackOffsets' track is asked once per Send, on the sending goroutine only (a plain
// counter in it is race-free), and its answer decides which acknowledgements are offsets.
func TestTrackOffsetsAsksTrackOncePerSend(t *testing.T) {
	trackOffsetsAsksTrackOncePerSend(t, startBroker(t))
}

func trackOffsetsAsksTrackOncePerSend(t *testing.T, e testCluster) {
	tracked, untracked := kafkatest.Name(t, "tracked"), kafkatest.Name(t, "untracked")
	createTopic(t, e, tracked, 1)
	createTopic(t, e, untracked, 1)
	p, err := NewProducer(e.Addrs(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	asked := 0
	p.TrackOffsets(func(topic string) bool { asked++; return topic == tracked })
	for i, topic := range []string{tracked, untracked, tracked, untracked, tracked} {
		if err := p.Send(topic, 0, []byte("k"), []byte("v"), nil, 1, nil); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if asked != 5 {
		t.Fatalf("track asked %d times for 5 sends", asked)
	}
	got := p.AckedOffsets()
	if want := map[pipeline.TopicPartition]int64{{Topic: tracked}: 2}; !maps.Equal(got, want) {
		t.Fatalf("AckedOffsets = %v, want %v", got, want)
	}
}

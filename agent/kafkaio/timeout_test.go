package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatflow/agent/internal/kfaketest"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// failures collects what OnFailure sees, and consumes nothing.
type failures struct {
	mu   sync.Mutex
	errs []*ProduceError
}

func (f *failures) add(pe *ProduceError) bool {
	f.mu.Lock()
	f.errs = append(f.errs, pe)
	f.mu.Unlock()
	return false
}

func (f *failures) get() []*ProduceError {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.errs)
}

// limits are the default producer limits with delivery timeout d.
func limits(d time.Duration) ProducerLimits {
	l := DefaultProducerLimits
	l.DeliveryTimeout = d
	return l
}

// isTimeout reports whether err is a retriable ProduceError wrapping ErrTimeout.
func isTimeout(err error) bool {
	var pe *ProduceError
	return errors.As(err, &pe) && errors.Is(err, ErrTimeout) && pe.Retriable() && !pe.Unsent
}

// A batch refused on every try with a retriable error fails once delivery.timeout.ms has
// passed since it was created, though retries are left: retries do not run on for
// retries × (backoff + metadata refresh).
func TestProducerDeliveryTimeoutEndsRetries(t *testing.T) {
	e := startBroker(t)
	createTopic(t, e, "leaderless", 1)
	refused := e.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "leaderless", Err: kerr.NotLeaderForPartition, Count: -1})
	defer refused.Remove()
	cfg := idempotentConfig()
	cfg.Producer.Retry.Max = math.MaxInt32
	const timeout = 400 * time.Millisecond
	p, err := NewProducerWith(e.Addrs(), cfg, limits(timeout))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var failed failures
	p.OnFailure = failed.add
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for i := range 3 {
		if err := p.Send("leaderless", 0, nil, []byte(strconv.Itoa(i)), nil, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	err = p.Flush(ctx)
	took := time.Since(start)
	if !isTimeout(err) || !errors.Is(err, sarama.ErrNotLeaderForPartition) || !strings.Contains(err.Error(), "delivery.timeout.ms") {
		t.Fatalf("Flush = %v, want a retriable delivery timeout naming the last try's error", err)
	}
	if took < timeout || took > timeout+5*time.Second {
		t.Fatalf("the records failed after %v, want about delivery.timeout.ms (%v)", took, timeout)
	}
	if got := failed.get(); len(got) != 3 || !isTimeout(got[0]) {
		t.Fatalf("OnFailure saw %v, want the 3 records timed out", got)
	}
	if refused.Hits() < 2 {
		t.Fatalf("%d produce requests, want the batch retried until its time was up", refused.Hits())
	}
}

// A record waiting behind a request that the broker does not answer fails at its delivery
// timeout, while the request is still held; the held record is settled by its answer.
func TestProducerDeliveryTimeoutBehindAHeldRequest(t *testing.T) {
	e := startBroker(t)
	createTopic(t, e, "held", 1)
	release, held := kfaketest.HoldProduce(e.cluster, "held")
	defer release()
	const timeout = 300 * time.Millisecond
	p, err := NewProducerWith(e.Addrs(), idempotentConfig(), limits(timeout))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var failed failures
	p.OnFailure = failed.add
	if err := p.Send("held", 0, nil, []byte("in flight"), nil, 1, nil); err != nil {
		t.Fatal(err)
	}
	<-held
	start := time.Now()
	if err := p.Send("held", 0, nil, []byte("waiting"), nil, 1, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the waiting record to time out", func() bool { return len(failed.get()) > 0 })
	if took := time.Since(start); took < timeout {
		t.Fatalf("the waiting record failed after %v, before delivery.timeout.ms (%v)", took, timeout)
	}
	if got := failed.get(); len(got) != 1 || string(got[0].Value) != "waiting" || !isTimeout(got[0]) {
		t.Fatalf("OnFailure saw %v, want the waiting record timed out", got)
	}
	release()
	if err := p.Flush(t.Context()); !isTimeout(err) {
		t.Fatalf("Flush = %v, want the waiting record's timeout", err)
	}
	if hw := highWatermarks(t, e, "held"); hw[0] != 1 {
		t.Fatalf("broker holds %v records, want the one in flight", hw)
	}
}

// With the broker gone, Flush and Close end after about delivery.timeout.ms, though
// retries are left.
func TestProducerDeliveryTimeoutWithTheBrokerGone(t *testing.T) {
	e := startBroker(t)
	createTopic(t, e, "gone", 1)
	cfg := testConfig()
	cfg.Producer.Retry.Max = math.MaxInt32
	cfg.Metadata.Retry.Max = 1
	cfg.Net.DialTimeout = 200 * time.Millisecond
	const timeout = 500 * time.Millisecond
	p, err := NewProducerWith(e.Addrs(), cfg, limits(timeout))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := sendNumbered(t, p, "gone", 0, 0, 1); err != nil {
		t.Fatal(err)
	}
	e.Close()
	start := time.Now()
	if err := p.Send("gone", 0, nil, []byte("lost"), nil, 1, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := p.Flush(ctx); !isTimeout(err) {
		t.Fatalf("Flush = %v, want the delivery timeout", err)
	}
	if took := time.Since(start); took > timeout+5*time.Second {
		t.Fatalf("the record failed after %v, want about delivery.timeout.ms (%v)", took, timeout)
	}
	if err := p.Send("gone", 0, nil, []byte("lost too"), nil, 1, nil); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := p.Close(); !isTimeout(err) {
		t.Fatalf("Close = %v, want the delivery timeout", err)
	}
	if took := time.Since(start); took > timeout+5*time.Second {
		t.Fatalf("Close took %v, want about delivery.timeout.ms (%v)", took, timeout)
	}
}

// Send waits for buffer room at most max.block.ms, then fails with a retriable timeout
// naming the topic, without queuing the record.
func TestProducerSendGivesUpAfterMaxBlock(t *testing.T) {
	e := startBroker(t)
	createTopic(t, e, "bounded", 1)
	release, held := kfaketest.HoldProduce(e.cluster, "bounded")
	defer release()
	l := DefaultProducerLimits
	l.BufferMemory = 10 * (msgOverhead + recordSize(nil, []byte("v"), nil))
	l.MaxBlock = 200 * time.Millisecond
	p, err := NewProducerWith(e.Addrs(), testConfig(), l)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for range 10 {
		if err := p.Send("bounded", 0, nil, []byte("v"), nil, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	<-held
	start := time.Now()
	err = p.Send("bounded", 0, nil, []byte("v"), nil, 1, nil)
	took := time.Since(start)
	if !isTimeout(err) || !strings.Contains(err.Error(), `topic "bounded"`) || !strings.Contains(err.Error(), "max.block.ms") {
		t.Fatalf("Send past the buffer bound = %v, want a retriable timeout naming the topic and max.block.ms", err)
	}
	if took < l.MaxBlock || took > l.MaxBlock+5*time.Second {
		t.Fatalf("Send gave up after %v, want about max.block.ms (%v)", took, l.MaxBlock)
	}
	release()
	if err := p.Flush(t.Context()); err != nil {
		t.Fatalf("Flush = %v: the refused record must not count", err)
	}
	if hw := highWatermarks(t, e, "bounded"); hw[0] != 10 {
		t.Fatalf("broker holds %v records, want the 10 taken", hw)
	}
}

// Records whose topic's partition count is not known within max.block.ms fail with a
// retriable timeout naming the topic, however long sarama's lookup would go on.
func TestProducerTopicLookupGivesUpAfterMaxBlock(t *testing.T) {
	producerTopicLookupGivesUpAfterMaxBlock(t, startBroker(t))
}

func producerTopicLookupGivesUpAfterMaxBlock(t *testing.T, e testCluster) {
	nowhere := kafkatest.Name(t, "nowhere")
	cfg := testConfig()
	cfg.Metadata.Retry.Max = 100 // the lookup of a topic the cluster lacks takes 10 s
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	l := DefaultProducerLimits
	l.MaxBlock = 300 * time.Millisecond
	p, err := NewProducerWith(e.Addrs(), cfg, l)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	start := time.Now()
	if err := p.Send(nowhere, -1, nil, []byte("v"), nil, 1, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := p.Seal().Wait(ctx); !isTimeout(err) || !strings.Contains(err.Error(), fmt.Sprintf("topic %q not in the metadata after max.block.ms", nowhere)) {
		t.Fatalf("the epoch's error = %v, want the lookup's timeout naming the topic", err)
	}
	if took := time.Since(start); took < l.MaxBlock {
		t.Fatalf("the record failed after %v, before max.block.ms (%v)", took, l.MaxBlock)
	}
}

// A batch over the topic's max.message.bytes (but within max.request.size) is split and
// its halves sent: every record arrives once, in order, with the idempotent sequences
// intact. A single record over it fails alone; the records around it are delivered.
func TestProducerSplitsBatchTooLarge(t *testing.T) {
	producerSplitsBatchTooLarge(t, startBroker(t))
}

func producerSplitsBatchTooLarge(t *testing.T, e testCluster) {
	small := kafkatest.Name(t, "small")
	limit := "2000"
	if err := EnsureTopics(e.Addrs(), testConfig(), map[string]TopicSpec{
		small: {Partitions: 1, ReplicationFactor: -1, Configs: map[string]*string{"max.message.bytes": &limit}},
	}); err != nil {
		t.Fatal(err)
	}
	cfg := idempotentConfig()
	cfg.Producer.Flush.Frequency = 20 * time.Millisecond // batches of many records
	p, err := NewProducer(e.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := sendNumbered(t, p, small, 0, 0, 3000); err != nil {
		t.Fatalf("Flush = %v, want every record of the split batches delivered", err)
	}
	if got := numbers(t, e, small, 0); !slices.Equal(got, sequence(0, 3000)) {
		t.Fatalf("the partition holds %d records, want 0..2999 once each, in order (first %v)", len(got), got[:min(len(got), 10)])
	}

	var failed failures
	p.OnFailure = failed.add
	for i := 3000; i < 3010; i++ {
		value := []byte(strconv.Itoa(i))
		if i == 3005 {
			value = []byte(strings.Repeat("x", 3000))
		}
		if err := p.Send(small, 0, []byte("k"), value, nil, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(t.Context()); !errors.Is(err, sarama.ErrMessageSizeTooLarge) {
		t.Fatalf("Flush = %v, want the record over max.message.bytes refused", err)
	}
	if got := failed.get(); len(got) != 1 || len(got[0].Value) != 3000 {
		t.Fatalf("OnFailure saw %d records, want the large one alone", len(got))
	}
	if err := sendNumbered(t, p, small, 0, 3010, 10); err != nil {
		t.Fatalf("Flush after the refused record = %v, want the sequences unbroken", err)
	}
	want := append(sequence(0, 3005), sequence(3006, 14)...)
	if got := numbers(t, e, small, 0); !slices.Equal(got, want) {
		t.Fatalf("the partition holds %d records, want 0..3019 without 3005 (last %v)", len(got), got[max(0, len(got)-20):])
	}
}

package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Producer writes records asynchronously through a sarama AsyncProducer and tracks what is
// still unacknowledged, so that Flush can close the at-least-once half of a commit
// barrier: once Flush returns nil, every record sent before it is in Kafka. With a
// transactional id it also runs Kafka transactions (see BeginTxn).
type Producer struct {
	// OnAck, if set before the first Send, is called on sarama's success goroutine for
	// every acknowledged record, with the record's topic. It must be quick: it delays
	// the acknowledgement of the records behind it.
	OnAck func(topic string)
	// OnFailure, if set before the first Send, is called on sarama's error goroutine for
	// every record the broker did not take. Returning true consumes the failure: Send and
	// Flush do not report it. It must be quick and must not call Send: sarama waits for
	// its error goroutine.
	OnFailure func(*ProduceError) bool

	brokers []string
	cfg     *sarama.Config
	client  sarama.Client
	ap      sarama.AsyncProducer
	closed  atomic.Bool
	txnID   string      // transactional id; "" for a plain producer
	fenced  atomic.Bool // a broker reported this producer fenced: every transaction call fails
	acked   atomic.Pointer[ackTracker]
	// maxBytes and recordVersion are sarama's size check (Producer.MaxMessageBytes), done
	// in Send so that a record too large is refused before sarama sees it.
	maxBytes      int
	recordVersion int

	// pending counts records sent and neither acknowledged nor failed. When it drops to
	// zero while a Flush waits (waiters > 0), idle is closed and replaced.
	pending atomic.Int64
	waiters atomic.Int32
	idleMu  sync.Mutex
	idle    chan struct{}

	// firstErr is the first asynchronous error since the last Flush (sticky).
	firstErr atomic.Pointer[error]
	// epoch counts the records sent since the last Seal (seal.go).
	epoch atomic.Pointer[sendEpoch]

	partitions sync.Map // topic → int32 partition count
	msgs       msgRecycler
	drained    sync.WaitGroup // the success and error goroutines
}

var errProducerClosed = errors.New("producer is closed")

// recordVersion is the message format sarama sizes records with: record batches (v2) from
// Kafka 0.11 on, message sets before.
func recordVersion(v sarama.KafkaVersion) int {
	if v.IsAtLeast(sarama.V0_11_0_0) {
		return 2
	}
	return 1
}

// NewProducer connects to brokers with a copy of cfg. The copy always returns successes
// and errors (Flush needs both) and uses the partitioner described at Send; every other
// setting, Flush.Frequency included, is the caller's.
//
// cfg.Producer.Transaction.ID makes the producer transactional; sarama then requires
// Producer.Idempotent, RequiredAcks = WaitForAll, Net.MaxOpenRequests = 1 and Version >=
// 0.11. Starting it fences any earlier producer with the same transactional id and aborts
// that producer's open transaction. Keep Flush.Frequency at 0 (or about a millisecond):
// sarama's commit waits for it before it flushes, so every commit would pay it.
func NewProducer(brokers []string, cfg *sarama.Config) (*Producer, error) {
	if cfg == nil {
		return nil, errors.New("new producer: nil sarama config")
	}
	c := *cfg
	c.Producer.Return.Successes = true
	c.Producer.Return.Errors = true
	c.Producer.Partitioner = newRequestedPartitioner
	txnID := c.Producer.Transaction.ID
	what := "new producer"
	if txnID != "" {
		what = fmt.Sprintf("new transactional producer %q", txnID)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}

	p := &Producer{
		brokers:       brokers,
		cfg:           &c,
		txnID:         txnID,
		maxBytes:      c.Producer.MaxMessageBytes,
		recordVersion: recordVersion(c.Version),
		idle:          make(chan struct{}),
	}
	p.epoch.Store(newSendEpoch())
	if err := p.open(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return p, nil
}

// open connects the sarama client and producer and starts draining their results.
func (p *Producer) open() error {
	client, err := sarama.NewClient(p.brokers, p.cfg)
	if err != nil {
		return fmt.Errorf("connect to %v: %w", p.brokers, err)
	}
	// A transactional producer gets its producer id and epoch here (InitProducerId).
	ap, err := sarama.NewAsyncProducerFromClient(client)
	if err != nil {
		_ = client.Close()
		return fencedError(p.txnID != "", err)
	}
	p.client, p.ap = client, ap
	p.drained.Add(2)
	go p.drainSuccesses()
	go p.drainErrors()
	return nil
}

// Send queues one record. partition >= 0 is used as is; partition < 0 lets the producer
// choose: murmur2 of the key bytes as Java's default partitioner does, a random partition
// for a nil key. A negative timestampMs lets the producer stamp the current time. source
// is the consumed record the record comes from (nil: none, as for changelog records); a
// ProduceError carries it.
//
// key, value, the header values and source are not copied: they must stay unchanged until
// the record is acknowledged (Flush returns). Send returns the first asynchronous error seen
// since the last Flush (or AbortTxn), without queuing the record, so a failing broker
// stops the caller early. Send blocks while sarama's input buffer is full. A
// transactional producer fails records sent outside a transaction (see BeginTxn).
//
// A record larger than max.request.size is refused at once with a ProduceError marked
// Unsent, before sarama sees it: sarama would fail it asynchronously and, in a
// transaction, make the whole transaction abortable; refused here, it harms nothing.
//
// Send is called from one goroutine at a time (the processing loop, or the demo feeder on
// its own producer): the messages it reuses are kept unlocked on the sending side.
func (p *Producer) Send(topic string, partition int32, key, value []byte, headers pipeline.Headers, timestampMs int64, source *pipeline.SourceRecord) error {
	if e := p.firstErr.Load(); e != nil {
		return *e
	}
	if p.closed.Load() {
		return fmt.Errorf("send to topic %q: %w", topic, errProducerClosed)
	}
	m := p.msgs.get()
	m.fill(topic, partition, key, value, headers, timestampMs)
	if size := m.msg.ByteSize(p.recordVersion); size > p.maxBytes {
		p.msgs.unused(m)
		return &ProduceError{Topic: topic, Partition: partition, Key: key, Value: value, Source: source, Unsent: true,
			Err: fmt.Errorf("%w: %d bytes when serialized, max.request.size is %d", ErrRecordTooLarge, size, p.maxBytes)}
	}
	m.source = source
	p.pending.Add(1)
	m.epoch = p.epoch.Load()
	if t := p.acked.Load(); t != nil {
		m.tracked = t.track(topic)
	}
	m.epoch.sent(m.tracked)
	p.ap.Input() <- &m.msg
	return nil
}

// PartitionsFor returns the partition count of topic. Counts are cached; an unknown topic
// is looked up in the cluster metadata.
func (p *Producer) PartitionsFor(topic string) (int32, error) {
	if n, ok := p.partitions.Load(topic); ok {
		return n.(int32), nil
	}
	parts, err := p.client.Partitions(topic)
	if err != nil {
		return 0, fmt.Errorf("partitions of topic %q: %w", topic, err)
	}
	n := int32(len(parts))
	p.partitions.Store(topic, n)
	return n, nil
}

// Flush blocks until every record sent so far is acknowledged or failed, then returns the
// first asynchronous error since the previous Flush and forgets it. If ctx ends first,
// Flush returns ctx's error and keeps the sticky error for the next call.
func (p *Producer) Flush(ctx context.Context) error {
	p.waiters.Add(1)
	defer p.waiters.Add(-1)
	for p.pending.Load() > 0 {
		p.idleMu.Lock()
		idle := p.idle
		p.idleMu.Unlock()
		// Re-check after taking idle: a drop to zero before that closed an older channel.
		if p.pending.Load() == 0 {
			break
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return fmt.Errorf("flush producer (%d records unacknowledged): %w", p.pending.Load(), ctx.Err())
		}
	}
	if e := p.firstErr.Swap(nil); e != nil {
		return *e
	}
	return nil
}

// Close waits for the records in flight (sarama sends a held batch only when
// Flush.Frequency elapses, so Close can take that long), closes the producer and returns
// the sticky error if one is left. Send must not be called during or after Close. A
// transaction still open is neither committed nor aborted here: the broker aborts it when
// it times out or when the next producer with the same transactional id starts.
func (p *Producer) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	p.ap.AsyncClose()
	p.drained.Wait()
	var errs []error
	if e := p.firstErr.Swap(nil); e != nil {
		errs = append(errs, *e)
	}
	if err := p.client.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close producer client: %w", err))
	}
	return errors.Join(errs...)
}

func (p *Producer) drainSuccesses() {
	defer p.drained.Done()
	for msg := range p.ap.Successes() {
		if p.OnAck != nil {
			p.OnAck(msg.Topic)
		}
		var epoch *sendEpoch
		var tracked bool
		m, ok := msg.Metadata.(*outMsg)
		if ok {
			epoch, tracked = m.epoch, m.tracked
		}
		// Before finish: once Flush returns, AckedOffsets holds every acknowledged record.
		if t := p.acked.Load(); t != nil && tracked {
			t.record(msg)
		}
		// sarama is done with a message once it is on Successes (it clears its internal
		// state before handing it over), so it can be reused; the race tests watch this.
		if ok {
			p.msgs.recycle(m)
		}
		p.finish()
		epoch.finish(tracked, nil)
	}
}

func (p *Producer) drainErrors() {
	defer p.drained.Done()
	for pe := range p.ap.Errors() {
		err := p.fail(pe.Err)
		if errors.Is(err, sarama.ErrMessageSizeTooLarge) {
			err = fmt.Errorf("%w (the broker judges a whole batch against the topic's max.message.bytes; "+
				"keep max.request.size at or below it, so that a record too large is refused alone before it is sent)", err)
		}
		perr := &ProduceError{Topic: pe.Msg.Topic, Partition: pe.Msg.Partition, Err: err}
		var epoch *sendEpoch
		var tracked bool
		if m, ok := pe.Msg.Metadata.(*outMsg); ok {
			perr.Key, perr.Value, perr.Source = m.key, m.value, m.source
			epoch, tracked = m.epoch, m.tracked
		}
		var failed *error
		if p.OnFailure == nil || !p.OnFailure(perr) {
			var err error = perr
			failed = &err
			p.firstErr.CompareAndSwap(nil, failed)
		}
		// A failed message is not recycled: sarama still reads it after reporting it
		// (the retry backoff looks at it). Failures are rare; the GC takes it.
		p.finish()
		epoch.finish(tracked, failed)
	}
}

// finish counts one record as done and wakes Flush when it was the last one.
func (p *Producer) finish() {
	if p.pending.Add(-1) == 0 && p.waiters.Load() > 0 {
		p.idleMu.Lock()
		close(p.idle)
		p.idle = make(chan struct{})
		p.idleMu.Unlock()
	}
}

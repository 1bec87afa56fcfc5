package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Producer writes records asynchronously and tracks what is still unacknowledged, so that
// Flush can close the at-least-once half of a commit barrier: once Flush returns nil,
// every record sent before it is in Kafka. With a transactional id it also runs Kafka
// transactions (see BeginTxn).
//
// It is its own batching producer on sarama's client and broker requests (batch.go,
// sender.go, delivery.go, idempotence.go, txn.go), not sarama's AsyncProducer, whose
// unbuffered channels cost every record about six goroutine hand-offs: here Send appends
// the record to its partition's batch, one goroutine per broker sends the batches, and a
// batch is acknowledged whole.
type Producer struct {
	// OnAck, if set before the first Send, is called for every acknowledged record, with
	// the record's topic, on a broker's sender goroutine; calls of OnAck and OnFailure
	// never overlap, so they need no lock of their own. It must be quick: it delays the
	// acknowledgement of the records behind it.
	OnAck func(topic string)
	// OnFailure, if set before the first Send, is called for every record the broker did
	// not take, on the goroutine that learnt it. Returning true consumes the failure: Send
	// and Flush do not report it. It must be quick and must not call Send: the records
	// behind it wait for it.
	OnFailure func(*ProduceError) bool
	callbacks sync.Mutex // serializes OnAck and OnFailure

	cfg    *sarama.Config
	client sarama.Client
	closed atomic.Bool
	txnID  string      // transactional id; "" for a plain producer
	fenced atomic.Bool // a broker reported this producer fenced: every transaction call fails
	inTxn  atomic.Bool // a transaction is open (BeginTxn until its commit or abort)
	acked  atomic.Pointer[ackTracker]
	// maxBytes is max.request.size (Producer.MaxMessageBytes): Send refuses a record
	// larger, a batch and a request stay within it.
	maxBytes int
	// linger, flushBytes, flushMessages and maxMessages are Producer.Flush's Frequency,
	// Bytes, Messages and MaxMessages.
	linger                                 time.Duration
	flushBytes, flushMessages, maxMessages int
	produceVersion                         int16
	// deliveryTimeout is delivery.timeout.ms: a batch fails this long after it was
	// created, wherever it is (expire.go); 0: never. maxBlock is max.block.ms: the longest
	// a Send waits for buffer room, and records wait for their topic's partition count.
	deliveryTimeout, maxBlock time.Duration

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
	// lane is Send's: the lane of one goroutine at a time (lane.go).
	lane Lane

	mu           sync.Mutex // guards the batches, the partitions' state and what follows
	space        sync.Cond  // on mu: Send waits for buffer room
	spaceWaiters int
	buffered     int // cost of the records sent and not finished (batch.cost)
	maxBuffered  int
	all          []*partition
	parts        map[string][]*partition // topic → partitions, once its count is known
	unresolved   map[string][]*outMsg    // records waiting for their topic's partition count
	senders      map[int32]*brokerSender // by broker id
	freeBatches  []*batch
	// forcing counts the calls (commit, abort, close) that want every batch sent now,
	// linger.ms or not.
	forcing       int
	producerID    int64
	producerEpoch int16
	initializing  bool  // reinit is asking for a new producer id: nothing is sent
	seqBroken     bool  // a sequenced batch failed for good, or an abort was abandoned: take a new producer id
	txnGen        int64 // the open transaction's number
	txnAdded      bool  // partitions or offsets were added to the open transaction
	txnCommitting bool  // a commit of the open transaction was sent (EndTxn)

	txnMu sync.Mutex // one AddPartitionsToTxn at a time
	stop  chan struct{}
	wg    sync.WaitGroup // the senders and reroutes
}

var errProducerClosed = errors.New("producer is closed")

// ErrTimeout is wrapped by the failures of records that ran out of time, as Java's
// TimeoutException: a batch not acknowledged within delivery.timeout.ms of its creation, a
// Send that found no buffer room within max.block.ms, a topic whose partition count was
// not known within max.block.ms. It is retriable: the broker may be back the next time.
var ErrTimeout = errors.New("timed out")

// ProducerLimits are the producer's bounds that sarama's config has no field for.
type ProducerLimits struct {
	// DeliveryTimeout (delivery.timeout.ms) is how long after its batch was created a
	// record fails if it is not acknowledged by then: waiting in the buffer, lingering,
	// in flight or between retries; 0 means never.
	DeliveryTimeout time.Duration
	// MaxBlock (max.block.ms) is the longest a Send waits for buffer room, and a record
	// waits for its topic's partition count.
	MaxBlock time.Duration
	// BufferMemory (buffer.memory) bounds the bytes of records sent and not yet
	// acknowledged or failed.
	BufferMemory int
}

// DefaultProducerLimits are Java's producer defaults.
var DefaultProducerLimits = ProducerLimits{
	DeliveryTimeout: 120 * time.Second,
	MaxBlock:        60 * time.Second,
	BufferMemory:    32 << 20,
}

// NewProducer connects to brokers with a copy of cfg, whose Producer settings it applies
// as sarama's AsyncProducer would: Flush (Frequency is linger.ms, Bytes and Messages send
// a batch before it, MaxMessages bounds one), MaxMessageBytes, RequiredAcks, Timeout,
// Compression and CompressionLevel, Retry, Idempotent and Transaction. Return and
// Partitioner are its own (see Send).
//
// cfg.Producer.Transaction.ID makes the producer transactional; that requires
// Producer.Idempotent, RequiredAcks = WaitForAll, Net.MaxOpenRequests = 1 and Version >=
// 0.11, as sarama does. Starting it fences any earlier producer with the same
// transactional id and aborts that producer's open transaction. Keep Flush.Frequency at 0
// (or about a millisecond): Flush waits for it, so every at-least-once barrier would pay
// it.
//
// Its delivery timeout, max.block.ms and buffer bound are DefaultProducerLimits; see
// NewProducerWith.
func NewProducer(brokers []string, cfg *sarama.Config) (*Producer, error) {
	return NewProducerWith(brokers, cfg, DefaultProducerLimits)
}

// NewProducerWith is NewProducer with the given limits.
func NewProducerWith(brokers []string, cfg *sarama.Config, limits ProducerLimits) (*Producer, error) {
	if cfg == nil {
		return nil, errors.New("new producer: nil sarama config")
	}
	c := *cfg
	c.Producer.Return.Successes = true
	c.Producer.Return.Errors = true
	txnID := c.Producer.Transaction.ID
	what := "new producer"
	if txnID != "" {
		what = fmt.Sprintf("new transactional producer %q", txnID)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if limits.DeliveryTimeout < 0 || limits.MaxBlock <= 0 || limits.BufferMemory <= 0 {
		return nil, fmt.Errorf("%s: limits %+v: the delivery timeout must not be negative, max.block.ms and buffer.memory must be positive", what, limits)
	}
	if !c.Version.IsAtLeast(sarama.V0_11_0_0) {
		return nil, fmt.Errorf("%s: not supported yet: Kafka version %s (the producer writes record batches, Kafka 0.11 and later)", what, c.Version)
	}
	p := &Producer{
		cfg:             &c,
		txnID:           txnID,
		maxBytes:        c.Producer.MaxMessageBytes,
		linger:          c.Producer.Flush.Frequency,
		flushBytes:      c.Producer.Flush.Bytes,
		flushMessages:   c.Producer.Flush.Messages,
		maxMessages:     c.Producer.Flush.MaxMessages,
		produceVersion:  produceVersion(c.Version),
		idle:            make(chan struct{}),
		parts:           make(map[string][]*partition),
		unresolved:      make(map[string][]*outMsg),
		maxBuffered:     limits.BufferMemory,
		deliveryTimeout: limits.DeliveryTimeout,
		maxBlock:        limits.MaxBlock,
		senders:         make(map[int32]*brokerSender),
		producerID:      -1,
		producerEpoch:   -1,
		stop:            make(chan struct{}),
	}
	p.space.L = &p.mu
	p.lane.p = p
	p.epoch.Store(newSendEpoch())
	client, err := sarama.NewClient(brokers, p.cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: connect to %v: %w", what, brokers, err)
	}
	p.client = client
	if c.Producer.Idempotent {
		// A transactional producer fences its predecessors here.
		if p.producerID, p.producerEpoch, err = p.initProducerID(); err != nil {
			_ = client.Close()
			return nil, fmt.Errorf("%s: %w", what, fencedError(txnID != "", err))
		}
	}
	if p.deliveryTimeout > 0 {
		p.wg.Add(1)
		go p.expireBatches()
	}
	return p, nil
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
// stops the caller early. Send blocks while the records unacknowledged take
// ProducerLimits.BufferMemory (buffer.memory), until acknowledgements or failures (a
// failing broker's records fail after their retries or their delivery timeout) make room;
// after ProducerLimits.MaxBlock (max.block.ms) it gives up and returns a ProduceError
// wrapping ErrTimeout, without queuing the record. A transactional producer refuses
// records sent outside a transaction (see BeginTxn).
//
// A record larger than max.request.size is refused at once with a ProduceError marked
// Unsent, before it is sent: in a transaction, a record the broker refused would make the
// whole transaction abortable; refused here, it harms nothing. A record for a topic the
// cluster does not know, or for a partition the topic does not have, fails as one the
// broker refused: Send and Flush report it afterwards. So do the records of a topic whose
// partition count is not known within max.block.ms (ErrTimeout).
//
// Send is called from one goroutine at a time (the processing loop, or the demo feeder on
// its own producer): the messages it reuses are kept unlocked on the sending side. Goroutines
// that send at once (the agent's workers) each send through a Lane of their own.
func (p *Producer) Send(topic string, partition int32, key, value []byte, headers pipeline.Headers, timestampMs int64, source *pipeline.SourceRecord) error {
	return p.lane.Send(topic, partition, key, value, headers, timestampMs, source)
}

func (p *Producer) send(free *[]*outMsg, topic string, partition int32, key, value []byte, headers pipeline.Headers, timestampMs int64, source *pipeline.SourceRecord) error {
	if e := p.firstErr.Load(); e != nil {
		return *e
	}
	if p.closed.Load() {
		return fmt.Errorf("send to topic %q: %w", topic, errProducerClosed)
	}
	unsent := func(err error) error {
		return &ProduceError{Topic: topic, Partition: partition, Key: key, Value: value, Source: source, Unsent: true, Err: err}
	}
	size := recordSize(key, value, headers)
	if size > p.maxBytes {
		return unsent(tooLarge(size, p.maxBytes))
	}
	if p.txnID != "" && !p.inTxn.Load() {
		return unsent(fmt.Errorf("transactional producer %q: record sent outside a transaction (BeginTxn first)", p.txnID))
	}
	m := p.msgs.get(free)
	m.fill(key, value, headers, timestampMs, size)
	m.topic, m.requested, m.source = topic, partition, source
	m.epoch = p.epoch.Load()
	if t := p.acked.Load(); t != nil {
		m.tracked = t.track(topic)
	}
	return p.appendRecord(m)
}

// partitionLocked returns the state of the partition m goes to, or nil when its topic's
// partition count is not known yet: then m waits for resolve, which looks the topic up
// without holding up Send, as sarama's producer did. p.mu is held.
func (p *Producer) partitionLocked(m *outMsg) (*partition, error) {
	parts, ok := p.parts[m.topic]
	if !ok {
		if waiting, ok := p.unresolved[m.topic]; ok {
			p.unresolved[m.topic] = append(waiting, m)
			return nil, nil
		}
		n, ok := p.partitions.Load(m.topic)
		if !ok {
			p.unresolved[m.topic] = []*outMsg{m}
			p.wg.Add(1)
			go p.resolve(m.topic)
			return nil, nil
		}
		parts = make([]*partition, n.(int32))
		p.parts[m.topic] = parts
	}
	id, err := choosePartition(m.requested, m.rec.Key, int32(len(parts)))
	if err != nil {
		return nil, fmt.Errorf("partition %d of topic %q (%d partitions): %w", m.requested, m.topic, len(parts), err)
	}
	ps := parts[id]
	if ps == nil {
		ps = &partition{topic: m.topic, id: id}
		parts[id] = ps
		p.all = append(p.all, ps)
	}
	return ps, nil
}

// resolve looks up the partition count of topic and sends the records waiting for it, or
// fails them: a topic may appear later, so the failure is retriable, not Unsent. A lookup
// that takes longer than max.block.ms fails them with ErrTimeout.
func (p *Producer) resolve(topic string) {
	defer p.wg.Done()
	type lookup struct {
		n   int32
		err error
	}
	// The lookup is not waited for past max.block.ms, nor by Close: sarama bounds it by
	// its metadata retries and network timeouts, and once the client is closed it fails.
	found := make(chan lookup, 1)
	go func() {
		n, err := p.PartitionsFor(topic)
		found <- lookup{n, err}
	}()
	timer := time.NewTimer(p.maxBlock)
	var r lookup
	select {
	case r = <-found:
		timer.Stop()
	case <-timer.C:
		r.err = fmt.Errorf("%w: topic %q not in the metadata after max.block.ms (%v)", ErrTimeout, topic, p.maxBlock)
	}
	n, err := r.n, r.err
	p.mu.Lock()
	waiting := p.unresolved[topic]
	delete(p.unresolved, topic)
	var failed []*outMsg
	var errs []error
	if err == nil {
		p.parts[topic] = make([]*partition, n)
		for _, m := range waiting {
			p.giveRoomLocked(m.size + msgOverhead) // addLocked takes it again for a batch
			if err := p.addLocked(m); err != nil {
				failed, errs = append(failed, m), append(errs, err)
			}
		}
	}
	p.mu.Unlock()
	for i, m := range failed {
		p.failMsg(m, errs[i])
	}
	if err != nil {
		// They held their room until they were reported, as a failed batch's records do: a
		// Send that waited for room returns after the failures it waited for.
		for _, m := range waiting {
			p.failMsg(m, err)
		}
		p.mu.Lock()
		for _, m := range waiting {
			p.giveRoomLocked(m.size + msgOverhead)
		}
		p.mu.Unlock()
	}
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
// Flush returns ctx's error and keeps the sticky error for the next call. A batch still
// lingering (Flush.Frequency) is not hurried: Flush waits for it.
func (p *Producer) Flush(ctx context.Context) error {
	if err := p.waitIdle(ctx); err != nil {
		return err
	}
	if p.txnID == "" && p.cfg.Producer.Idempotent && p.sequenceBroken() {
		if err := p.reinit(); err != nil {
			p.firstErr.CompareAndSwap(nil, &err)
		}
	}
	if e := p.firstErr.Swap(nil); e != nil {
		return *e
	}
	return nil
}

func (p *Producer) sequenceBroken() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seqBroken
}

// waitIdle blocks until no record is pending, or ctx ends.
func (p *Producer) waitIdle(ctx context.Context) error {
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
	return nil
}

// sendAll waits for every record sent so far, sending lingering batches at once.
func (p *Producer) sendAll(ctx context.Context) error {
	p.mu.Lock()
	p.forcing++
	for _, s := range p.senders {
		s.signal()
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.forcing--
		p.mu.Unlock()
	}()
	return p.waitIdle(ctx)
}

// Close sends the batches still lingering, waits for the records in flight (a failing
// broker's records fail after their retries or their delivery timeout), closes the
// producer and returns the sticky error if one is left. Send must not be called during or
// after Close. A transaction still open is neither committed nor aborted here: the broker
// aborts it when it times out or when the next producer with the same transactional id
// starts.
func (p *Producer) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	_ = p.sendAll(context.Background())
	close(p.stop)
	p.wg.Wait()
	var errs []error
	if e := p.firstErr.Swap(nil); e != nil {
		errs = append(errs, *e)
	}
	if err := p.client.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close producer client: %w", err))
	}
	return errors.Join(errs...)
}

package kafkaio

import (
	"fmt"
	"slices"
	"time"

	"github.com/IBM/sarama"
)

// Batch building. Send appends each record to its partition's open batch under p.mu; a
// batch closes when the next record would take it over the size limits, and its broker
// sender takes the partition's oldest batch into its next produce request once the batch
// is ready (at once when linger.ms is 0). While a request is in flight the records sent
// meanwhile gather in the open batches: that is where big batches come from, and a record
// costs no goroutine hand-off on its way.

// partition is the producer's state of one topic partition. Its fields after id are
// guarded by Producer.mu.
type partition struct {
	topic string
	id    int32

	open   *batch        // the batch records are appended to; nil when none
	queue  []*batch      // closed batches not yet acknowledged, in send order
	sender *brokerSender // the leader's sender; nil until a reroute finds it
	// busy: a request holding the partition's oldest batch is in flight, or a reroute
	// looks for its leader; nothing else of the partition is sent meanwhile, which keeps
	// its order across retries.
	busy bool
	// inFlight: busy with a request holding queue[0]; the batch stays the caller's (its
	// bytes may still be read) until the request returns, so it cannot expire before.
	inFlight bool
	queued   bool  // on its sender's ready list (then !busy)
	nextSeq  int32 // the idempotent sequence of the next batch closed
	// maxBatch, when not 0, bounds the partition's batches below max.request.size: half a
	// batch the broker refused as larger than the topic's max.message.bytes.
	maxBatch int
	txnGen   int64 // the transaction it was last added to (Producer.txnGen)
}

// hasData reports whether records of the partition wait to be sent.
func (ps *partition) hasData() bool { return ps.open != nil || len(ps.queue) > 0 }

// batch is records of one partition sent together as one record batch.
type batch struct {
	ps      *partition
	msgs    []*outMsg
	recs    []*sarama.Record
	bytes   int       // the records' encoded size, bounded
	created time.Time // when its first record came: linger.ms and delivery.timeout.ms count from it
	firstTs int64
	maxTs   int64
	retries int
	lastErr error // why its last try failed; nil before one did
	// sequenced: it has its producer id, epoch and first sequence, which a retry keeps.
	sequenced bool
	rb        sarama.RecordBatch
}

// recordBatchOverhead is what a record batch adds to its records (sarama's own figure).
const recordBatchOverhead = 49

// A record counts its size and msgOverhead, about what its outMsg and bookkeeping take,
// against ProducerLimits.BufferMemory.
const msgOverhead = 256

func (b *batch) add(m *outMsg) {
	if len(b.msgs) == 0 {
		b.firstTs, b.maxTs = m.ts, m.ts
	}
	b.maxTs = max(b.maxTs, m.ts)
	m.rec.TimestampDelta = time.Duration(m.ts-b.firstTs) * time.Millisecond
	m.rec.OffsetDelta = int64(len(b.msgs))
	b.msgs = append(b.msgs, m)
	b.recs = append(b.recs, &m.rec)
	b.bytes += m.size
}

// cost is what the batch holds of the buffer bound.
func (b *batch) cost() int { return b.bytes + len(b.msgs)*msgOverhead }

// appendRecord counts m as sent and adds it to its partition's open batch, waiting while
// the buffer bound is reached, at most max.block.ms: then m is not sent and the error says
// so.
func (p *Producer) appendRecord(m *outMsg) error {
	cost := m.size + msgOverhead
	p.mu.Lock()
	if p.buffered > 0 && p.buffered+cost > p.maxBuffered {
		if err := p.waitRoomLocked(cost); err != nil {
			p.mu.Unlock()
			return &ProduceError{Topic: m.topic, Partition: m.requested, Key: m.rec.Key, Value: m.rec.Value, Source: m.source, Err: err}
		}
	}
	p.pending.Add(1)
	m.epoch.sent(m.tracked)
	err := p.addLocked(m)
	p.mu.Unlock()
	if err != nil {
		p.failMsg(m, err)
	}
	return nil
}

// waitRoomLocked waits until cost more bytes fit in the buffer bound, or max.block.ms
// passed. p.mu is held.
func (p *Producer) waitRoomLocked(cost int) error {
	deadline := time.Now().Add(p.maxBlock)
	// sync.Cond has no timed wait: a timer wakes the waiters at the deadline.
	timer := time.AfterFunc(p.maxBlock, func() {
		p.mu.Lock()
		p.space.Broadcast()
		p.mu.Unlock()
	})
	defer timer.Stop()
	for p.buffered > 0 && p.buffered+cost > p.maxBuffered {
		if !time.Now().Before(deadline) {
			return fmt.Errorf("%w: no buffer room for a record of %d bytes within max.block.ms (%v): records of %d bytes are unacknowledged, buffer.memory is %d",
				ErrTimeout, cost, p.maxBlock, p.buffered, p.maxBuffered)
		}
		p.spaceWaiters++
		p.space.Wait()
		p.spaceWaiters--
	}
	return nil
}

// addLocked adds m to its partition's open batch, or to the records waiting for its
// topic's partition count. p.mu is held.
func (p *Producer) addLocked(m *outMsg) error {
	ps, err := p.partitionLocked(m)
	if err != nil {
		return err
	}
	// A record waiting for its topic's partition count holds buffer room too: while a
	// lookup takes its time (a broker that does not answer), Send must not pile up records
	// without bound.
	p.buffered += m.size + msgOverhead
	if ps == nil {
		return nil
	}
	b := ps.open
	if b != nil && !p.fits(b, m) {
		ps.queue = append(ps.queue, b)
		b = nil
	}
	wake := false
	if b == nil {
		b = p.newBatch(ps)
		ps.open = b
		wake = true // a closed batch is ready at once
	}
	b.add(m)
	if p.linger > 0 && p.bigEnough(b) {
		wake = true
	}
	p.scheduleLocked(ps, wake)
	return nil
}

// fits reports whether m can join b within max.request.size and Flush.MaxMessages.
func (p *Producer) fits(b *batch, m *outMsg) bool {
	if p.maxMessages > 0 && len(b.msgs) >= p.maxMessages {
		return false
	}
	limit := p.maxBytes
	if b.ps.maxBatch > 0 {
		limit = min(limit, b.ps.maxBatch)
	}
	return recordBatchOverhead+b.bytes+m.size <= limit
}

// splitLocked replaces b, the oldest batch of its partition, which the broker refused as
// too large, with two batches of half its records each, first in the partition's queue in
// b's place: the order stays. b's sequence is given again to the first half: the broker
// wrote none of b, and nothing else of the partition was sequenced after it (b was in
// flight). Later batches of the partition are kept to half b's size. p.mu is held.
func (p *Producer) splitLocked(b *batch) {
	ps := b.ps
	half := len(b.msgs) / 2
	first, second := p.newBatch(ps), p.newBatch(ps)
	for _, m := range b.msgs[:half] {
		first.add(m)
	}
	for _, m := range b.msgs[half:] {
		second.add(m)
	}
	for _, nb := range []*batch{first, second} {
		nb.created, nb.retries = b.created, b.retries
	}
	p.unsequenceLocked(b)
	if limit := recordBatchOverhead + b.bytes/2; ps.maxBatch == 0 || limit < ps.maxBatch {
		ps.maxBatch = limit
	}
	ps.queue = slices.Insert(ps.queue, 1, second)
	ps.queue[0] = first
	// The halves hold b's buffer room.
	p.freeBatch(b)
}

// bigEnough reports whether b is sent before linger.ms is up: batch.size or
// Flush.Messages is reached.
func (p *Producer) bigEnough(b *batch) bool {
	return (p.flushBytes > 0 && b.bytes >= p.flushBytes) || (p.flushMessages > 0 && len(b.msgs) >= p.flushMessages)
}

func (p *Producer) newBatch(ps *partition) *batch {
	var b *batch
	if n := len(p.freeBatches); n > 0 {
		b = p.freeBatches[n-1]
		p.freeBatches[n-1] = nil
		p.freeBatches = p.freeBatches[:n-1]
	} else {
		b = new(batch)
	}
	b.ps = ps
	b.created = time.Now()
	return b
}

// freeBatch takes back a finished batch; p.mu is held.
func (p *Producer) freeBatch(b *batch) {
	clear(b.msgs)
	clear(b.recs)
	*b = batch{msgs: b.msgs[:0], recs: b.recs[:0]}
	p.freeBatches = append(p.freeBatches, b)
}

// scheduleLocked puts a partition with records to send on its sender's ready list, or has
// a reroute find its leader first. wake wakes the sender even when the partition is on
// its list already (a batch became ready before linger.ms). p.mu is held.
func (p *Producer) scheduleLocked(ps *partition, wake bool) {
	switch {
	case ps.busy || !ps.hasData():
	case ps.queued:
		if wake {
			ps.sender.signal()
		}
	case ps.sender == nil:
		p.startReroute(ps, false)
	default:
		ps.queued = true
		ps.sender.ready = append(ps.sender.ready, ps)
		ps.sender.signal()
	}
}

// readyLocked reports whether the open batch b goes out now, and else when it will.
func (p *Producer) readyLocked(b *batch, now time.Time) (bool, time.Time) {
	if p.linger <= 0 || p.forcing > 0 || p.bigEnough(b) {
		return true, time.Time{}
	}
	due := b.created.Add(p.linger)
	return !now.Before(due), due
}

// collect takes the next request's batches off s's ready partitions: the oldest batch of
// each, within max.request.size, sequenced under idempotence. It returns the batches and,
// when none is ready, when the earliest open batch will be (zero: no batch waits).
func (p *Producer) collect(s *brokerSender, taken []*batch) ([]*batch, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var next time.Time
	if p.initializing {
		return taken, next
	}
	var now time.Time
	if p.linger > 0 {
		now = time.Now()
	}
	used := 0
	keep := s.ready[:0]
	for _, ps := range s.ready {
		if ps.open != nil {
			if ready, due := p.readyLocked(ps.open, now); ready {
				ps.queue = append(ps.queue, ps.open)
				ps.open = nil
			} else if next.IsZero() || due.Before(next) {
				next = due
			}
		}
		if len(ps.queue) > 0 && (len(taken) == 0 || used+ps.queue[0].bytes+recordBatchOverhead <= p.maxBytes) {
			b := ps.queue[0]
			p.sequenceLocked(b)
			taken = append(taken, b)
			used += b.bytes + recordBatchOverhead
			ps.busy, ps.inFlight, ps.queued = true, true, false
			continue
		}
		if ps.hasData() {
			keep = append(keep, ps)
		} else {
			ps.queued = false
		}
	}
	clear(s.ready[len(keep):])
	s.ready = keep
	if len(taken) > 0 {
		next = time.Time{}
	}
	return taken, next
}

// recordBatch is b on the wire; built once, a retry resends it as it is.
func (p *Producer) recordBatch(b *batch) *sarama.RecordBatch {
	if b.rb.Records == nil {
		b.rb.Version = 2
		b.rb.Codec = p.cfg.Producer.Compression
		b.rb.CompressionLevel = p.cfg.Producer.CompressionLevel
		b.rb.FirstTimestamp = time.UnixMilli(b.firstTs)
		b.rb.MaxTimestamp = time.UnixMilli(b.maxTs)
		b.rb.LastOffsetDelta = int32(len(b.recs) - 1)
		b.rb.IsTransactional = p.txnID != ""
		b.rb.Records = b.recs
		if !b.sequenced {
			b.rb.ProducerID, b.rb.ProducerEpoch, b.rb.FirstSequence = -1, -1, -1
		}
	}
	return &b.rb
}

// dequeueLocked removes the partition's oldest batch, b, once it is acknowledged or
// failed, and lets the partition send again. p.mu is held.
func (p *Producer) dequeueLocked(b *batch) {
	ps := b.ps
	if len(ps.queue) > 0 && ps.queue[0] == b {
		copy(ps.queue, ps.queue[1:])
		ps.queue[len(ps.queue)-1] = nil
		ps.queue = ps.queue[:len(ps.queue)-1]
	}
	p.releaseLocked(b)
}

// releaseLocked gives the buffer room of a finished batch back and recycles it.
func (p *Producer) releaseLocked(b *batch) {
	p.giveRoomLocked(b.cost())
	p.freeBatch(b)
}

// giveRoomLocked gives n bytes of buffer room back and wakes the Send waiting for it.
// p.mu is held.
func (p *Producer) giveRoomLocked(n int) {
	p.buffered -= n
	if p.spaceWaiters > 0 {
		p.space.Broadcast()
	}
}

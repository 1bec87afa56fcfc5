package kafkaio

import (
	"errors"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Delivery: a batch is acknowledged or failed whole, on the goroutine that learnt it (a
// broker sender, or a reroute that gave up); its records are counted off the pending
// count, their send epochs and the offset tracker once per batch, not one by one.

// epochRun is consecutive records of a batch sent in one send epoch.
type epochRun struct {
	e            *sendEpoch
	all, tracked int64
}

// ackBatch settles b as written at offsets base, base+1, ... (base < 0: not known, as for
// a duplicate of an earlier try), recycling its messages into done.
func (p *Producer) ackBatch(done *[]*outMsg, b *batch, base int64) {
	if p.OnAck != nil {
		p.callbacks.Lock()
		for range b.msgs {
			p.OnAck(b.ps.topic)
		}
		p.callbacks.Unlock()
	}
	lastTracked := -1
	for i, m := range b.msgs {
		if m.tracked {
			lastTracked = i
		}
	}
	// Before the counts drop: once Flush or WaitTracked returns, AckedOffsets holds every
	// acknowledged record.
	if t := p.acked.Load(); t != nil && lastTracked >= 0 && base >= 0 {
		t.record(pipeline.TopicPartition{Topic: b.ps.topic, Partition: b.ps.id}, base+int64(lastTracked))
	}
	var runs [4]epochRun
	n := 0
	for _, m := range b.msgs {
		if n == 0 || runs[n-1].e != m.epoch {
			if n == len(runs) {
				runs[n-1].finish(nil)
				n--
			}
			runs[n] = epochRun{e: m.epoch}
			n++
		}
		r := &runs[n-1]
		r.all++
		if m.tracked {
			r.tracked++
		}
		p.msgs.recycle(done, m)
	}
	p.finish(int64(len(b.msgs)))
	for i := range n {
		runs[i].finish(nil)
	}
}

// finish counts the run's records as done.
func (r *epochRun) finish(failed *error) {
	r.e.finishN(r.all, r.tracked, failed)
}

// failBatches fails each batch of failed with its error of errs, then gives its buffer room
// back: a Send waiting for room returns after the failures it waited for. p.mu is not held.
func (p *Producer) failBatches(failed []*batch, errs []error) {
	for i, b := range failed {
		p.failBatch(b, errs[i])
	}
	p.mu.Lock()
	for _, b := range failed {
		p.releaseLocked(b)
	}
	p.mu.Unlock()
}

// failBatch reports every record of b as a ProduceError for err. The messages are not
// recycled: failures are rare, the GC takes them.
func (p *Producer) failBatch(b *batch, err error) {
	if b.sequenced {
		// Before the records count as done: a Flush that sees them done takes a new
		// producer id before anything else is sent.
		p.mu.Lock()
		p.seqBroken = true
		p.mu.Unlock()
	}
	err = p.fail(err)
	if errors.Is(err, sarama.ErrMessageSizeTooLarge) {
		err = fmt.Errorf("%w (the record alone is over the topic's max.message.bytes, a larger batch is split and sent in halves; "+
			"keep max.request.size at or below it, so that such a record is refused before it is sent)", err)
	}
	for _, m := range b.msgs {
		p.failRecord(&ProduceError{Topic: b.ps.topic, Partition: b.ps.id, Key: m.rec.Key, Value: m.rec.Value, Source: m.source, Err: err}, m.epoch, m.tracked)
	}
}

// failMsg fails a record that found no partition to go to.
func (p *Producer) failMsg(m *outMsg, err error) {
	p.failRecord(&ProduceError{Topic: m.topic, Partition: m.requested, Key: m.rec.Key, Value: m.rec.Value, Source: m.source, Err: err}, m.epoch, m.tracked)
}

// failRecord reports the failure of one record sent in epoch, unless OnFailure consumes it.
func (p *Producer) failRecord(perr *ProduceError, epoch *sendEpoch, tracked bool) {
	var failed *error
	if !p.consumeFailure(perr) {
		var err error = perr
		failed = &err
		p.firstErr.CompareAndSwap(nil, failed)
	}
	p.finish(1)
	epoch.finish(tracked, failed)
}

// finish counts n records as done and wakes Flush when they were the last ones.
func (p *Producer) finish(n int64) {
	if p.pending.Add(-n) == 0 && p.waiters.Load() > 0 {
		p.idleMu.Lock()
		close(p.idle)
		p.idle = make(chan struct{})
		p.idleMu.Unlock()
	}
}

// consumeFailure asks OnFailure whether it consumes perr.
func (p *Producer) consumeFailure(perr *ProduceError) bool {
	if p.OnFailure == nil {
		return false
	}
	p.callbacks.Lock()
	defer p.callbacks.Unlock()
	return p.OnFailure(perr)
}

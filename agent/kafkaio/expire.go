package kafkaio

import (
	"fmt"
	"time"
)

// Delivery timeout: a batch fails delivery.timeout.ms after it was created, as in Java's
// producer, wherever it waits: in its partition's open batch or queue (lingering, behind a
// busy partition), or between retries. A batch in flight is settled when its request
// returns, which request.timeout.ms bounds: until then the request may still be reading
// the caller's bytes, which a failed record hands back. Retries stay bounded by Retry.Max
// too.

// expired reports whether b's delivery timeout has passed at now.
func (p *Producer) expired(b *batch, now time.Time) bool {
	return p.deliveryTimeout > 0 && now.Sub(b.created) >= p.deliveryTimeout
}

// timeoutError is the failure of b's records once its delivery timeout passed.
func (p *Producer) timeoutError(b *batch) error {
	err := fmt.Errorf("%w: %d records for %s/%d not acknowledged within delivery.timeout.ms (%v) of their batch's creation",
		ErrTimeout, len(b.msgs), b.ps.topic, b.ps.id, p.deliveryTimeout)
	if b.lastErr != nil {
		err = fmt.Errorf("%w; the last try: %w", err, b.lastErr)
	}
	return err
}

// expireBatches fails the batches whose delivery timeout passed until the producer closes.
// It sleeps until the earliest deadline of the batches it saw: a batch created meanwhile
// expires no earlier than a full timeout from the scan, when it wakes at the latest.
func (p *Producer) expireBatches() {
	defer p.wg.Done()
	timer := time.NewTimer(p.deliveryTimeout)
	defer timer.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-timer.C:
		}
		timer.Reset(time.Until(p.expireDue(time.Now())))
	}
}

// expireDue fails the batches not in flight whose delivery timeout passed at now, and
// returns when the next one will.
func (p *Producer) expireDue(now time.Time) time.Time {
	next := now.Add(p.deliveryTimeout)
	var failed []*batch
	p.mu.Lock()
	for _, ps := range p.all {
		if !ps.hasData() {
			continue
		}
		if ps.open != nil && p.expired(ps.open, now) {
			failed = append(failed, ps.open)
			ps.open = nil
		}
		keep := ps.queue[:0]
		for i, b := range ps.queue {
			if (i > 0 || !ps.inFlight) && p.expired(b, now) {
				failed = append(failed, b)
				continue
			}
			keep = append(keep, b)
		}
		clear(ps.queue[len(keep):])
		ps.queue = keep
		for _, b := range ps.queue {
			if due := b.created.Add(p.deliveryTimeout); due.Before(next) && due.After(now) {
				next = due
			}
		}
		if ps.open != nil {
			if due := ps.open.created.Add(p.deliveryTimeout); due.Before(next) {
				next = due
			}
		}
	}
	errs := make([]error, len(failed))
	for i, b := range failed {
		errs[i] = p.timeoutError(b)
	}
	p.mu.Unlock()
	p.failBatches(failed, errs)
	return next
}

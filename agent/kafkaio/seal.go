package kafkaio

import (
	"context"
	"fmt"
	"sync/atomic"
)

// A send epoch is the records sent between two Seal calls: a caller can wait for the
// acknowledgements of one epoch's records, or of its records to the topics TrackOffsets
// tracks only, while it sends the next epoch's, where Flush waits for every record sent so
// far.

// sendEpoch counts the records of one send epoch that are neither acknowledged nor failed:
// all of them, and those to tracked topics.
type sendEpoch struct {
	all, tracked pending
	sealed       atomic.Bool
	err          atomic.Pointer[error] // the first failure OnFailure did not consume
}

// pending is a count of unfinished records and the channel closed once the count is zero
// in a sealed epoch.
type pending struct {
	n      atomic.Int64
	closed atomic.Bool
	done   chan struct{}
}

func newSendEpoch() *sendEpoch {
	e := &sendEpoch{}
	e.all.done, e.tracked.done = make(chan struct{}), make(chan struct{})
	return e
}

// sent counts a record sent in the epoch.
func (e *sendEpoch) sent(tracked bool) {
	e.all.n.Add(1)
	if tracked {
		e.tracked.n.Add(1)
	}
}

// finish counts one record of the epoch as done; failed is its error when the record failed
// and OnFailure did not consume it.
func (e *sendEpoch) finish(tracked bool, failed *error) {
	var t int64
	if tracked {
		t = 1
	}
	e.finishN(1, t, failed)
}

// finishN counts all records of the epoch as done, tracked of them to tracked topics.
func (e *sendEpoch) finishN(all, tracked int64, failed *error) {
	if failed != nil {
		e.err.CompareAndSwap(nil, failed)
	}
	if tracked > 0 {
		e.tracked.finishN(e, tracked)
	}
	e.all.finishN(e, all)
}

func (c *pending) finishN(e *sendEpoch, n int64) {
	if c.n.Add(-n) == 0 && e.sealed.Load() {
		c.close()
	}
}

func (c *pending) close() {
	if c.closed.CompareAndSwap(false, true) {
		close(c.done)
	}
}

// Sealed is a send epoch that Seal ended.
type Sealed struct{ e *sendEpoch }

// Done is closed once every record of the epoch is acknowledged or failed.
func (s Sealed) Done() <-chan struct{} { return s.e.all.done }

// Wait blocks until every record of the epoch is acknowledged or failed and returns the
// first failure (a *ProduceError, wrapped) that OnFailure did not consume; or ctx's error
// if ctx ends first. Unlike Flush it leaves the producer's sticky error alone: Send and
// Flush still report the failure.
func (s Sealed) Wait(ctx context.Context) error { return s.wait(ctx, &s.e.all, "") }

// WaitTracked is Wait for the epoch's records to the topics TrackOffsets tracks: once it
// returns nil, AckedOffsets covers them. A failure of another record of the epoch known by
// then is reported too.
func (s Sealed) WaitTracked(ctx context.Context) error {
	return s.wait(ctx, &s.e.tracked, "tracked ")
}

func (s Sealed) wait(ctx context.Context, c *pending, what string) error {
	select {
	case <-c.done:
	case <-ctx.Done():
		return fmt.Errorf("wait for the acknowledgements of the epoch's %srecords (%d unacknowledged): %w", what, c.n.Load(), ctx.Err())
	}
	if err := s.e.err.Load(); err != nil {
		return *err
	}
	return nil
}

// Seal ends the current send epoch and starts the next one: the records sent since the
// previous Seal (or NewProducer) belong to the returned epoch, those sent after it to the
// next. Send and Seal must be called from one goroutine.
func (p *Producer) Seal() Sealed {
	e := p.epoch.Swap(newSendEpoch())
	e.sealed.Store(true)
	if e.tracked.n.Load() == 0 {
		e.tracked.close()
	}
	if e.all.n.Load() == 0 {
		e.all.close()
	}
	return Sealed{e}
}

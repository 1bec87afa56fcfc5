package pipeline

// emittedSlidingMeta is the store metadata key holding the largest sliding-window start
// already emitted, so that a restart (or a replayed epoch) never emits a final result twice.
const emittedSlidingMeta = "emit-on-close.emitted-sliding-start"

// emitClosed forwards, in window-start order, every window of the task that the watermark
// (in task time, the operator's stream time) has closed since the last emission.
func (p *slidingAggregate) emitClosed(wm int64) error {
	// The complement of KStreamSlidingWindowAggregate's update acceptance (end ≥ stream
	// time − grace) with the watermark in place of stream time, which is its emit bound
	// upper = closeTime − d − 1.
	upper := p.time.lastClosed(wm) // the last closed start
	if upper < 0 {
		return nil
	}
	return p.ctx.forEachTask(func(partition int32) error { return p.emitPartition(partition, upper) })
}

// emitPartition forwards the windows with start in (last emitted, upper] and deletes those
// no record can need any more (see windowAggregate.emitPartition for why). An emitted
// window is not deleted at once: a later record seeds its left window from the newest window
// ending before it, scanning back 2d. A window starting before upper − d lies below the scan
// of every record whose left window is still open, and any window a record could derive from
// it is closed, so it is never read again.
func (p *slidingAggregate) emitPartition(partition int32, upper int64) error {
	if err := p.holds.ensure(p.ctx, partition); err != nil {
		return err
	}
	store, err := p.ctx.windowStore(p.store, partition)
	if err != nil {
		return err
	}
	d := p.windows.TimeDifference
	err = p.ctx.emitFinalResults(p.store, partition, emittedSlidingMeta, upper,
		func(last int64) ([]finalResult, error) {
			return closedWindows(store, max(-1, last-d-1), upper, func(w Window) int64 { return w.Start + d })
		},
		func(r finalResult) error {
			if r.start >= upper-d {
				return nil
			}
			_, err := store.Put(r.key, nil, r.start, r.timestamp)
			return err
		})
	if err == nil {
		p.holds.emitted(store.bytes, partition, upper)
	}
	return err
}

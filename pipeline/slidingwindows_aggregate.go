package pipeline

// slidingAggregate is Kafka's KStreamSlidingWindowAggregate (its reverse-iteration path): a
// record updates every existing window it falls in, creates its own left window [ts − d, ts]
// and the right windows that become non-empty, and leaves alone the windows closed on the
// operator's stream time.
type slidingAggregate struct {
	ctx       *Context
	store     string
	windows   SlidingWindows
	init      Initializer
	agg       Aggregator
	oldValues *bool
	time      windowTime
	// emitOnClose stores updates without forwarding them; emitClosed forwards each window
	// once, when the watermark closes it; holds keep the windows waiting for it in the store.
	emitOnClose bool
	holds       *finalHolds
}

// aggAt is a window's aggregate and the largest timestamp of its records.
type aggAt struct {
	value any
	ts    int64
}

func (p *slidingAggregate) Init(ctx *Context) error {
	p.ctx = ctx
	p.time = slidingWindowsTime(ctx, p.windows, p.emitOnClose)
	if p.emitOnClose {
		p.holds = newWindowHolds(p.store, emittedSlidingMeta)
		p.time.onClose(p.emitClosed)
		ctx.onCommit(func() error { return p.holds.ensureAll(ctx) })
	}
	return nil
}

// slidingRecord is one record being processed with the task's window store.
type slidingRecord struct {
	p          *slidingAggregate
	rec        Record
	store      *WindowStore
	streamTime int64 // the operator's, for the record's task
}

func (p *slidingAggregate) Process(rec Record) error {
	if rec.Key == nil {
		p.ctx.Drop(DropNullKey)
		return nil
	}
	if rec.Value == nil {
		p.ctx.Drop(DropNullValue)
		return nil
	}
	ts, d := rec.Timestamp, p.windows.TimeDifference
	st := p.time.observe(rec.Partition, ts)
	if p.time.closedAt(ts, st) {
		// Even the latest window the record falls in, [ts, ts + d], is closed.
		p.ctx.Drop(DropLate)
		return nil
	}
	store, err := p.ctx.windowStore(p.store, rec.Partition)
	if err != nil {
		return err
	}
	if p.emitOnClose {
		if err := p.holds.ensure(p.ctx, rec.Partition); err != nil {
			return err
		}
	}
	r := &slidingRecord{p: p, rec: rec, store: store, streamTime: st}
	if ts < d {
		err = r.early()
	} else {
		err = r.reverse()
	}
	if err != nil {
		return err
	}
	return p.time.closeOn(st)
}

// windows returns the key's windows with start in [from, to], read before any update.
func (r *slidingRecord) windows(from, to int64, backward bool) ([]Window, error) {
	it, err := r.store.FetchKey(r.rec.Key, from, to, backward)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []Window
	for it.Next() {
		out = append(out, it.Window())
	}
	return out, it.Err()
}

// reverse is the general path: the windows that can hold the record, newest first.
func (r *slidingRecord) reverse() error {
	ts, d := r.rec.Timestamp, r.p.windows.TimeDifference
	ws, err := r.windows(max(0, ts-2*d), ts+1, true)
	if err != nil {
		return err
	}
	starts := map[int64]bool{}
	var rightAgg, leftAgg *aggAt
	var prev *int64
	leftExists, rightExists := false, false
scan:
	for _, w := range ws {
		starts[w.Start] = true
		end := w.Start + d
		switch {
		case w.Start == ts+1:
			rightExists = true
		case end > ts:
			if rightAgg == nil {
				rightAgg = &aggAt{w.Value, w.Timestamp}
			}
			if err := r.update(w.Start, &aggAt{w.Value, w.Timestamp}); err != nil {
				return err
			}
		case end == ts:
			leftExists = true
			if err := r.update(w.Start, &aggAt{w.Value, w.Timestamp}); err != nil {
				return err
			}
			if w.Timestamp >= ts {
				// A record at this very timestamp already created every other window.
				return nil
			}
			prev = &w.Timestamp
		default:
			leftAgg, prev = &aggAt{w.Value, w.Timestamp}, &w.Timestamp
			break scan
		}
	}
	if prev != nil && !starts[*prev+1] && *prev+1+d >= ts {
		if err := r.createAndUpdate(*prev + 1); err != nil {
			return err
		}
	}
	if !leftExists {
		if prev != nil && ts-d <= *prev && leftAgg != nil {
			if err := r.update(ts-d, &aggAt{leftAgg.value, ts}); err != nil {
				return err
			}
		} else if err := r.createAndUpdate(ts - d); err != nil {
			return err
		}
	}
	if !rightExists && rightAgg != nil && rightAgg.ts > ts {
		return r.createRight(rightAgg)
	}
	return nil
}

// early is the path of a record with ts < d: every such record shares the combined window
// [0, d], since no window starts below 0.
func (r *slidingRecord) early() error {
	ts := r.rec.Timestamp
	ws, err := r.windows(0, ts+1, false)
	if err != nil {
		return err
	}
	starts := map[int64]bool{}
	var combined, rightAgg *aggAt
	var prev *int64
	rightExists := false
	for _, w := range ws {
		starts[w.Start] = true
		switch {
		case w.Start == 0:
			combined = &aggAt{w.Value, w.Timestamp}
			if w.Timestamp < ts {
				prev = &w.Timestamp
			}
		case w.Start <= ts:
			rightAgg = &aggAt{w.Value, w.Timestamp}
			if err := r.update(w.Start, rightAgg); err != nil {
				return err
			}
		default:
			rightExists = true
		}
	}
	if rightAgg == nil && combined != nil && combined.ts > ts {
		rightAgg = combined
	}
	if !rightExists && rightAgg != nil && rightAgg.ts > ts {
		if err := r.createRight(rightAgg); err != nil {
			return err
		}
	}
	if prev != nil && !starts[*prev+1] {
		if err := r.createAndUpdate(*prev + 1); err != nil {
			return err
		}
	}
	if combined == nil {
		return r.createAndUpdate(0)
	}
	return r.update(0, combined)
}

// createAndUpdate creates the window at start from the initializer and adds the record.
func (r *slidingRecord) createAndUpdate(start int64) error {
	v, err := r.p.init()
	if err != nil {
		return err
	}
	return r.update(start, &aggAt{v, r.rec.Timestamp})
}

// update adds the record to the window at start holding cur, unless the window is closed.
func (r *slidingRecord) update(start int64, cur *aggAt) error {
	if !r.p.time.admits(r.streamTime, start) {
		return nil
	}
	next, err := r.p.agg(r.rec, cur.value)
	if err != nil {
		return err
	}
	ts := r.rec.Timestamp
	if cur.value != nil {
		ts = max(ts, cur.ts)
	}
	if _, err := r.store.Put(r.rec.Key, next, start, ts); err != nil {
		return err
	}
	if r.p.emitOnClose {
		return nil
	}
	c := Change{New: next}
	if *r.p.oldValues {
		c.Old = cur.value
	}
	return r.forward(start, c, ts)
}

// createRight stores the record's right window [ts + 1, ts + 1 + d] holding exactly the
// records after ts that an existing window holds; the record itself is not in it.
func (r *slidingRecord) createRight(agg *aggAt) error {
	start := r.rec.Timestamp + 1
	if r.p.time.closedByWatermark(start) {
		// Its records are already in final results; the record itself is not in it, so
		// nothing of the record is dropped.
		return nil
	}
	if _, err := r.store.Put(r.rec.Key, agg.value, start, agg.ts); err != nil {
		return err
	}
	if r.p.emitOnClose {
		return nil
	}
	return r.forward(start, Change{New: agg.value}, agg.ts)
}

func (r *slidingRecord) forward(start int64, c Change, ts int64) error {
	out := r.rec
	out.Key = Windowed{Key: r.rec.Key, Start: start, End: start + r.p.windows.TimeDifference}
	out.Value, out.Timestamp = c, ts
	return r.p.ctx.Forward(out)
}

package pipeline

import "math"

// windowTime is a windowed operator's time, kept the same way for every window kind, as
// Kafka Streams keeps it in AbstractKStreamTimeWindowAggregateProcessor: the operator's own
// stream time per task, the largest timestamp it has
// received (Kafka's observedStreamTime), and when one of its windows closes.
//
// An operator knows a window by one position, its start or its end, and the window closes
// closeAfter ms after it: it is closed at time t once position + closeAfter ≤ t. Late records
// are judged on the operator's stream time (DropLate); final results wait for the global
// watermark, which closes windows by the same rule (DESIGN.md §5), and a record for a window
// the watermark has closed is dropped (DropWindowClosed). In task time
// (TopologyOptions.TaskTime) final results come out on the operator's stream time too, after
// each record, as Kafka Streams emits them: a record for a window already emitted is late
// then, and no window waits for the watermark. The constructors below give each window
// kind's rule.
type windowTime struct {
	ctx        *Context
	streamTime map[int32]int64 // by task partition
	closeAfter int64
	// finalResults: the operator emits each window once, when its time closes it.
	finalResults bool
	// taskTime: windows close on the operator's stream time, not on the watermark.
	taskTime bool
	// emitClosed emits the final results of the windows closed at a time (onClose).
	emitClosed func(t int64) error
}

func newWindowTime(ctx *Context, closeAfter int64, finalResults bool) windowTime {
	return windowTime{ctx: ctx, streamTime: map[int32]int64{}, closeAfter: closeAfter, finalResults: finalResults,
		taskTime: ctx.topology.taskTime}
}

// timeWindowsTime: a time window [start, start + size) is known by its start and closed once
// end + grace ≤ t (KStreamWindowAggregate).
func timeWindowsTime(ctx *Context, w TimeWindows, finalResults bool) windowTime {
	return newWindowTime(ctx, closeSum(w.Size, w.Grace, 0), finalResults)
}

// slidingWindowsTime: a sliding window [start, start + d] holds its end, so it is closed once
// end + grace < t (KStreamSlidingWindowAggregate); it is known by its start.
func slidingWindowsTime(ctx *Context, w SlidingWindows, finalResults bool) windowTime {
	return newWindowTime(ctx, closeSum(w.TimeDifference, w.Grace, 1), finalResults)
}

// sessionWindowsTime: a session [start, end] is known by its end and closed once
// end + gap + grace < t (KStreamSessionWindowAggregate, the gap since KAFKA-12718).
func sessionWindowsTime(ctx *Context, w SessionWindows, finalResults bool) windowTime {
	return newWindowTime(ctx, closeSum(w.Gap, w.Grace, 1), finalResults)
}

// suppressTime: suppress holds a record by its buffer time and releases it once
// bufferTime + d ≤ t (KTableSuppressProcessorSupplier). For untilWindowCloses the buffer
// time is the window end and d the upstream grace, the gap included for sessions
// (GraphGraceSearchUtil), judged on the watermark; for untilTimeLimit the buffer time is the
// record's timestamp and d the limit, judged on the operator's stream time.
func suppressTime(ctx *Context, s Suppressed, grace int64) windowTime {
	if s.UntilWindowCloses {
		return newWindowTime(ctx, grace, true)
	}
	return newWindowTime(ctx, s.TimeLimit, false)
}

// closeSum is a + b + extra (b and extra not negative), at most math.MaxInt64, so that a
// huge grace period keeps every window open instead of wrapping around.
func closeSum(a, b, extra int64) int64 {
	return windowEnd(windowEnd(a, b), extra)
}

// observe advances the task's stream time to ts, if ts is later, and returns it.
func (w *windowTime) observe(partition int32, ts int64) int64 {
	st, seen := w.streamTime[partition]
	if !seen || ts > st {
		st = ts
		w.streamTime[partition] = st
	}
	return st
}

// closedAt reports whether the window at pos is closed at time t.
func (w *windowTime) closedAt(pos, t int64) bool { return pos <= w.lastClosed(t) }

// lastClosed is the largest position of a window closed at time t: t − closeAfter, held in
// the int64 range (closeAfter is negative for a join side whose before is).
func (w *windowTime) lastClosed(t int64) int64 {
	switch c := w.closeAfter; {
	case c > 0 && t < math.MinInt64+c:
		return math.MinInt64
	case c < 0 && t > math.MaxInt64+c:
		return math.MaxInt64
	}
	return t - w.closeAfter
}

// closedByWatermark reports whether the window at pos has had its final result from the
// watermark; never in task time, where the operator's stream time closes windows, on which
// such a record is late.
func (w *windowTime) closedByWatermark(pos int64) bool {
	return w.finalResults && !w.taskTime && w.closedAt(pos, w.ctx.watermark())
}

// onClose sets what emits the final results of the windows closed at a time: each time the
// watermark advances, or in task time after each record (closeOn).
func (w *windowTime) onClose(emit func(t int64) error) {
	if w.taskTime {
		w.emitClosed = emit
		return
	}
	w.ctx.onWatermark(emit)
}

// closeOn emits, in task time, the final results of the windows the operator's stream time
// st has closed, as Kafka Streams' windowed operators and suppress do after each record.
func (w *windowTime) closeOn(st int64) error {
	if w.emitClosed == nil {
		return nil
	}
	return w.emitClosed(st)
}

// admits reports whether a record may still update the window at pos, streamTime being the
// operator's stream time for the record's task; when it may not, the drop is counted.
func (w *windowTime) admits(streamTime, pos int64) bool {
	switch {
	case w.closedAt(pos, streamTime):
		w.ctx.Drop(DropLate)
		return false
	case w.closedByWatermark(pos):
		w.ctx.Drop(DropWindowClosed)
		return false
	}
	return true
}

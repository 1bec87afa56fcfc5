package pipeline

// The global watermark (DESIGN.md §5): the minimum, over the non-idle assigned source
// partitions, of each partition's stream time (largest record timestamp seen); the largest
// partition stream time when every partition is idle; never moving backwards. Late records
// are still judged on each operator's own stream time, as in Kafka Streams; only final
// results (emit on window close) wait for the watermark.

// TopicPartition names one partition of a source topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// SetAssignment tells the topology which source partitions it reads. Partitions not seen yet
// hold the watermark back until they deliver a record or become idle.
func (t *Topology) SetAssignment(tps []TopicPartition) {
	t.assigned = map[TopicPartition]bool{}
	for _, tp := range tps {
		t.assigned[tp] = true
	}
}

// SetIdle marks a source partition idle (nothing buffered, consumer at the log end for
// max.task.idle.ms) or busy again.
func (t *Topology) SetIdle(tp TopicPartition, idle bool) {
	if idle {
		t.idle[tp] = true
	} else {
		delete(t.idle, tp)
	}
}

// Watermark is the current global watermark, -1 before there is one.
func (t *Topology) Watermark() int64 { return t.watermark }

// HasWatermarkListeners reports whether a processor waits for the watermark.
func (t *Topology) HasWatermarkListeners() bool { return len(t.wmListeners) > 0 }

// onWatermark registers a processor that runs when the watermark advances.
func (t *Topology) onWatermark(fn func(wm int64) error) { t.wmListeners = append(t.wmListeners, fn) }

// AdvanceWatermark recomputes the watermark and, when it moved forward, runs the
// processors waiting for it.
func (t *Topology) AdvanceWatermark() error {
	if len(t.wmListeners) == 0 {
		return nil
	}
	wm, ok := t.computeWatermark()
	if !ok || wm <= t.watermark {
		return nil
	}
	if err := t.flushCachesBefore(wm); err != nil {
		return err
	}
	t.watermark = wm
	for _, fn := range t.wmListeners {
		if err := fn(wm); err != nil {
			return err
		}
	}
	return nil
}

func (t *Topology) computeWatermark() (int64, bool) {
	parts := t.assigned
	if parts == nil {
		parts = map[TopicPartition]bool{}
		for tp := range t.partTime {
			parts[tp] = true
		}
	}
	var lowest, highest int64 = -1, -1
	busy := false
	for tp := range parts {
		st, seen := t.partTime[tp]
		if seen && st > highest {
			highest = st
		}
		if t.idleAll || t.idle[tp] {
			continue
		}
		if !seen {
			return 0, false
		}
		busy = true
		if lowest < 0 || st < lowest {
			lowest = st
		}
	}
	if !busy {
		return highest, highest >= 0
	}
	return lowest, true
}

package pipeline

import (
	"cmp"
	"slices"
	"strings"
)

// The global watermark (DESIGN.md §5): the minimum, over the non-idle assigned source
// partitions, of each partition's stream time (largest record timestamp seen); the largest
// partition stream time when every partition is idle; never moving backwards. Late records
// are still judged on each operator's own stream time, as in Kafka Streams; only final
// results (emit on window close) wait for the watermark.

// SetAssignment tells the topology which source partitions it reads. Partitions not seen yet
// hold the watermark back until they deliver a record or become idle. Their tasks' user
// processors start (startTasks) on the next Process or PunctuateWallClock, which the agent
// calls inside an epoch, as what a processor's init writes or forwards belongs to one.
func (t *Topology) SetAssignment(tps []TopicPartition) {
	t.assigned = map[TopicPartition]bool{}
	for _, tp := range tps {
		t.assigned[tp] = true
	}
	t.unstarted = nil
	if len(tps) > 0 && slices.ContainsFunc(t.nodes, isTaskProcessor) {
		t.unstarted = slices.Clone(tps)
	}
}

// isTaskProcessor reports whether n runs a user processor per task (not a global store's),
// which a task starts.
func isTaskProcessor(n *runtimeNode) bool {
	up, ok := n.proc.(*userProcNode)
	return ok && up.global == ""
}

// startAssigned starts the tasks SetAssignment named.
func (t *Topology) startAssigned() error {
	tps := t.unstarted
	t.unstarted = nil
	return t.startTasks(tps)
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
// processors waiting for it. Process calls it per record only when some processor waits;
// otherwise whoever runs the topology calls it from time to time, so that Time reports a
// current watermark.
func (t *Topology) AdvanceWatermark() error {
	wm, ok := t.computeWatermark()
	if !ok || wm <= t.watermark {
		return nil
	}
	if len(t.wmListeners) == 0 {
		t.watermark = wm
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
	var lowest, highest int64 = -1, -1
	busy := false
	for tp := range t.sourcePartitions() {
		st, seen := t.partitionTime(tp)
		if seen && st > highest {
			highest = st
		}
		if t.isIdle(tp) {
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

// sourcePartitions are the partitions the watermark is taken over: the assigned ones, or
// every partition seen when no assignment was set.
func (t *Topology) sourcePartitions() map[TopicPartition]bool {
	if t.assigned != nil {
		return t.assigned
	}
	parts := make(map[TopicPartition]bool, len(t.partTime))
	for tp := range t.partTime {
		parts[tp] = true
	}
	return parts
}

func (t *Topology) isIdle(tp TopicPartition) bool { return t.idleAll || t.idle[tp] }

// PartitionTime is the time of one source partition.
type PartitionTime struct {
	TopicPartition
	// StreamTime is the largest record timestamp seen, -1 before the first record.
	StreamTime int64
	// Idle partitions do not hold the watermark back (SetIdle).
	Idle bool
	// HoldsBack marks the partitions the watermark waits for: the busy ones whose stream
	// time is the watermark's candidate, or that have delivered no record yet.
	HoldsBack bool
}

// TimeView is the engine's time at one moment: the global watermark and what it is made of.
type TimeView struct {
	Watermark  int64 // -1 before there is one
	Partitions []PartitionTime
}

// Time reports the watermark and every source partition's time, sorted by topic and
// partition. Like everything else of the topology it must be called from the goroutine
// that processes records.
func (t *Topology) Time() TimeView {
	parts := t.sourcePartitions()
	v := TimeView{Watermark: t.watermark, Partitions: make([]PartitionTime, 0, len(parts))}
	candidate, ok := t.computeWatermark()
	for tp := range parts {
		st, seen := t.partitionTime(tp)
		if !seen {
			st = -1
		}
		idle := t.isIdle(tp)
		v.Partitions = append(v.Partitions, PartitionTime{
			TopicPartition: tp, StreamTime: st, Idle: idle,
			HoldsBack: !idle && (!seen || (ok && st == candidate)),
		})
	}
	slices.SortFunc(v.Partitions, func(a, b PartitionTime) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return v
}

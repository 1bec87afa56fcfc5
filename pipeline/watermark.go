package pipeline

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// The global watermark (DESIGN.md §5): the minimum, over the non-idle assigned source
// partitions, of each partition's stream time (largest record timestamp seen); the largest
// partition stream time when every partition is idle; never moving backwards. Late records
// are still judged on each operator's own stream time, as in Kafka Streams; only final
// results (emit on window close) wait for the watermark.
//
// The tasks of one application may run on several topologies (the agent's workers), so
// the partitions' times and the watermark live in one GlobalTime they share. A task
// publishes its partitions' times once what their records produced is processed or on its
// way to another topology: the records on their way (in the exchange between workers, in a
// topology's record caches) hold the watermark back with Holds, so that it closes no window
// one of them still belongs to, whichever topology runs first.

// GlobalTime is the global watermark of the topologies of one application and what it is
// made of: each source partition's published stream time and idleness, and the holds of
// the records on their way between tasks. Its methods are safe from any goroutine.
type GlobalTime struct {
	mu       sync.Mutex // guards the changes of slots, assigned and holds
	slots    map[TopicPartition]*timeSlot
	assigned map[TopicPartition]bool // nil: every partition seen
	// view is what computing the watermark reads, replaced whenever slots, assigned or
	// holds change.
	view    atomic.Pointer[timeView]
	idleAll bool
	wm      atomic.Int64
	// listening counts the processors of every topology that wait for the watermark: while
	// none does, nothing on its way needs to hold it back.
	listening atomic.Int64
}

// timeSlot is one source partition's published stream time (math.MinInt64 until its first
// record) and idleness.
type timeSlot struct {
	tp   TopicPartition
	time atomic.Int64
	idle atomic.Bool
}

// timeView is the partitions the watermark is taken over and the holds, as a snapshot.
type timeView struct {
	parts []*timeSlot
	// seenOnly: no assignment was set; only partitions that delivered a record count.
	seenOnly bool
	holds    []*Hold
}

// NewGlobalTime returns the time of an application with no partition seen yet.
func NewGlobalTime() *GlobalTime {
	g := &GlobalTime{slots: map[TopicPartition]*timeSlot{}}
	g.wm.Store(-1)
	g.publishView()
	return g
}

// publishView rebuilds the view; the caller holds mu, or has g to itself.
func (g *GlobalTime) publishView() {
	v := &timeView{seenOnly: g.assigned == nil}
	if old := g.view.Load(); old != nil {
		v.holds = old.holds
	}
	if g.assigned != nil {
		for tp := range g.assigned {
			v.parts = append(v.parts, g.slotLocked(tp))
		}
	} else {
		for _, s := range g.slots {
			v.parts = append(v.parts, s)
		}
	}
	g.view.Store(v)
}

func (g *GlobalTime) slotLocked(tp TopicPartition) *timeSlot {
	s := g.slots[tp]
	if s == nil {
		s = &timeSlot{tp: tp}
		s.time.Store(math.MinInt64)
		g.slots[tp] = s
	}
	return s
}

// slot returns the slot of a source partition, made on first use.
func (g *GlobalTime) slot(tp TopicPartition) *timeSlot {
	g.mu.Lock()
	defer g.mu.Unlock()
	s, ok := g.slots[tp]
	if !ok {
		s = g.slotLocked(tp)
		if g.assigned == nil {
			g.publishView()
		}
	}
	return s
}

// SetAssignment sets the source partitions the watermark is taken over. Partitions not
// seen yet hold the watermark back until they deliver a record or become idle; nil takes it
// over every partition seen.
func (g *GlobalTime) SetAssignment(tps []TopicPartition) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if tps == nil {
		g.assigned = nil
	} else {
		g.assigned = make(map[TopicPartition]bool, len(tps))
		for _, tp := range tps {
			g.assigned[tp] = true
		}
	}
	g.publishView()
}

// SetIdle marks a source partition idle (nothing buffered, consumer at the log end for
// max.task.idle.ms) or busy again.
func (g *GlobalTime) SetIdle(tp TopicPartition, idle bool) { g.slot(tp).idle.Store(idle) }

// A Hold keeps the watermark below the earliest event time still on its way somewhere:
// records in a queue between topologies, updates in a record cache. The watermark stays
// at least one millisecond below it, so that no window such a record or update belongs to
// closes before it arrives.
type Hold struct{ at atomic.Int64 }

// NewHold adds a hold, holding nothing yet.
func (g *GlobalTime) NewHold() *Hold {
	h := &Hold{}
	h.at.Store(math.MaxInt64)
	g.mu.Lock()
	defer g.mu.Unlock()
	v := *g.view.Load()
	v.holds = append(slices.Clone(v.holds), h)
	g.view.Store(&v)
	return h
}

// Set holds the watermark below t; math.MaxInt64 holds nothing.
func (h *Hold) Set(t int64) { h.at.Store(t) }

// candidate is the watermark the partitions' times make, holds aside; false when a busy
// partition has delivered nothing yet, or none has.
func (g *GlobalTime) candidate() (int64, bool) {
	return g.view.Load().candidate(g.idleAll, nil)
}

// candidate is the watermark the partitions' times make, holds aside; own are a topology's
// partition times not published yet, counted at those times.
func (v *timeView) candidate(idleAll bool, own []*partTime) (int64, bool) {
	var lowest, highest int64 = -1, -1
	busy := false
	for _, s := range v.parts {
		st := s.time.Load()
		for _, p := range own {
			if p.slot == s {
				st = max(st, p.time)
				break
			}
		}
		seen := st != math.MinInt64
		if !seen && v.seenOnly {
			continue
		}
		if seen && st > highest {
			highest = st
		}
		if idleAll || s.idle.Load() {
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

// held lowers a watermark to below every hold.
func (v *timeView) held(wm int64) int64 {
	for _, h := range v.holds {
		if at := h.at.Load(); at <= wm {
			wm = at - 1
		}
	}
	return wm
}

// advance moves the watermark to what the partitions and holds make now, if that is
// later, and returns it (-1 before there is one).
func (g *GlobalTime) advance() int64 {
	v := g.view.Load()
	cand, ok := v.candidate(g.idleAll, nil)
	if ok {
		cand = v.held(cand)
		for {
			cur := g.wm.Load()
			if cand <= cur || g.wm.CompareAndSwap(cur, cand) {
				break
			}
		}
	}
	return g.wm.Load()
}

// Watermark is the global watermark, -1 before there is one.
func (g *GlobalTime) Watermark() int64 { return g.wm.Load() }

// Advance moves the watermark to what the partitions' published times and the holds make
// now, if that is later, and returns it: for whoever runs topologies whose processors do
// not wait for the watermark, so that Time reports a current one.
func (g *GlobalTime) Advance() int64 { return g.advance() }

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

// Time reports the watermark and every source partition's published time, sorted by topic
// and partition.
func (g *GlobalTime) Time() TimeView {
	v := g.view.Load()
	out := TimeView{Watermark: g.wm.Load(), Partitions: make([]PartitionTime, 0, len(v.parts))}
	candidate, ok := v.candidate(g.idleAll, nil)
	for _, s := range v.parts {
		st := s.time.Load()
		seen := st != math.MinInt64
		if !seen {
			if v.seenOnly {
				continue
			}
			st = -1
		}
		idle := g.idleAll || s.idle.Load()
		out.Partitions = append(out.Partitions, PartitionTime{
			TopicPartition: s.tp, StreamTime: st, Idle: idle,
			HoldsBack: !idle && (!seen || (ok && st == candidate)),
		})
	}
	slices.SortFunc(out.Partitions, func(a, b PartitionTime) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// The topology's side: its tasks publish their partitions' times, and it applies the
// watermark to its own tasks' processors.

// SetAssignment is GlobalTime.SetAssignment of the topology's time.
func (t *Topology) SetAssignment(tps []TopicPartition) { t.time.SetAssignment(tps) }

// SetIdle is GlobalTime.SetIdle of the topology's time.
func (t *Topology) SetIdle(tp TopicPartition, idle bool) { t.time.SetIdle(tp, idle) }

// Watermark is the watermark the topology's processors have seen, -1 before there is one.
func (t *Topology) Watermark() int64 { return t.watermark }

// HasWatermarkListeners reports whether a processor of one of the topology's tasks waits for
// the watermark.
func (t *Topology) HasWatermarkListeners() bool { return t.listening > 0 }

// listen counts n more (or fewer) processors waiting for the watermark, here and in the
// application's time.
func (t *Topology) listen(n int) {
	t.listening += n
	t.time.listening.Add(int64(n))
}

// computeWatermark is the watermark the partitions' times and the holds make now, this
// topology's partitions counted at the times of the records it processed and has not
// published yet, the one being processed among them; false while there is none. A
// processor that must not run ahead of the watermark its record makes (a stream-stream
// join's close time) reads it before the watermark moves.
func (t *Topology) computeWatermark() (int64, bool) {
	v := t.time.view.Load()
	cand, ok := v.candidate(t.time.idleAll, t.unpublished)
	if !ok {
		return 0, false
	}
	return v.held(cand), true
}

// Time is GlobalTime.Time of the topology's time.
func (t *Topology) Time() TimeView { return t.time.Time() }

// publish hands the stream times of the source partitions processed since the last call to
// the global time. The caller has drained the topology and flushed its router: nothing
// those records produced is unaccounted for.
func (t *Topology) publish() {
	for _, p := range t.unpublished {
		p.slot.time.Store(p.time)
		p.dirty = false
	}
	clear(t.unpublished)
	t.unpublished = t.unpublished[:0]
}

// AdvanceWatermark recomputes the global watermark and, when it moved past what this
// topology's processors have seen, runs those waiting for it. Process calls it per record
// only when some processor of the topology waits; otherwise whoever runs the topology calls
// it from time to time, so that Time reports a current watermark. While a processor of any
// topology of the application waits, the record caches that may hold an update of a window
// the new watermark closes are flushed first, and what they forward is processed (or handed
// to the router) before the watermark moves: a topology whose own processors do not wait
// still lets the others' watermark pass its caches.
func (t *Topology) AdvanceWatermark() error {
	if t.time.listening.Load() == 0 {
		t.watermark = max(t.watermark, t.time.advance())
		return nil
	}
	cand, ok := t.time.candidate()
	if !ok || cand <= t.watermark {
		return nil
	}
	if err := t.flushCachesBefore(cand); err != nil {
		return err
	}
	if err := t.drainAndFlush(); err != nil {
		return err
	}
	wm := t.time.advance()
	if wm <= t.watermark {
		return nil
	}
	t.watermark = wm
	for _, k := range t.order {
		for _, fn := range k.wmListeners {
			if err := fn(wm); err != nil {
				return err
			}
		}
	}
	return t.drainAndFlush()
}

package pipeline

import (
	"encoding/binary"
	"sort"
)

// Helpers of the processors that emit final results when the global watermark closes their
// windows (windowed aggregations with emit on close).

// forEachTask runs fn for the task's partition, whether or not it saw a record since it
// was made: windows restored from the changelog close too.
func (c *Context) forEachTask(fn func(partition int32) error) error {
	return fn(c.task.id.Partition)
}

// emittedPosition reads the position an emitter saved with its store partition, -1 when
// none, so that a restart or a replayed epoch never emits a final result twice.
func (t *Topology) emittedPosition(store string, partition int32, key string) (int64, error) {
	raw, err := t.storeProvider.Meta(store, partition, key)
	if err != nil || len(raw) != 8 {
		return -1, err
	}
	return int64(binary.BigEndian.Uint64(raw)), nil
}

// saveEmittedPosition keeps the position with the store partition; it commits with the epoch.
func (t *Topology) saveEmittedPosition(store string, partition int32, key string, pos int64) error {
	return t.storeProvider.PutMeta(store, partition, key, binary.BigEndian.AppendUint64(nil, uint64(pos)))
}

// finalResult is one closed window of an emitter, with the position its emitter orders and
// remembers it by (a window's start, a session's end).
type finalResult struct {
	pos       int64
	key       any
	start     int64
	end       int64
	value     any
	timestamp int64
}

// emitFinalResults forwards once, across restarts and replays, the final results of one task
// partition whose position is in (last emitted, upper]. closed(last) lists the closed windows
// in emission order (it may include windows at or before last, so that done can clean them
// up); done runs after each window, forwarded or not.
func (c *Context) emitFinalResults(store string, partition int32, metaKey string, upper int64,
	closed func(last int64) ([]finalResult, error), done func(finalResult) error) error {
	last, err := c.topology.emittedPosition(store, partition, metaKey)
	if err != nil {
		return err
	}
	if upper <= last {
		return nil
	}
	results, err := closed(last)
	if err != nil {
		return err
	}
	for _, r := range results {
		if r.pos > last {
			out := Record{
				Key:       Windowed{Key: r.key, Start: r.start, End: r.end},
				Value:     Change{New: r.value},
				Timestamp: r.timestamp,
				Partition: partition,
				Offset:    -1,
			}
			if err := c.Forward(out); err != nil {
				return err
			}
		}
		if err := done(r); err != nil {
			return err
		}
	}
	return c.topology.saveEmittedPosition(store, partition, metaKey, upper)
}

// closedWindows reads the windows of a time or sliding window store that start in
// (last, upper], held ones included, in window-start order (the store iterates by key
// first), as final results positioned by start.
func closedWindows(store *WindowStore, last, upper int64, end func(Window) int64) ([]finalResult, error) {
	it := store.iter(store.bytes.FetchHeld(last+1, upper))
	var out []finalResult
	for it.Next() {
		w := it.Window()
		out = append(out, finalResult{pos: w.Start, key: w.Key, start: w.Start, end: end(w), value: w.Value, timestamp: w.Timestamp})
	}
	err := it.Err()
	it.Close()
	sort.SliceStable(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out, err
}

// finalHolds keep the windows (sessions) of a store emitting final results on close that
// have not had their final result. The store has Kafka Streams' retention, so what queries
// see expires as in Kafka Streams, but a window the watermark has not closed yet is held
// past the retention (HoldFrom), since the watermark may lag the store's stream time by any
// amount. Windows are held by start, sessions by end: the emitters' positions.
type finalHolds struct {
	name    string // the store's
	metaKey string
	store   func(c *Context, partition int32) (holder, error)
	from    map[int32]int64 // each partition's hold, once set
}

// holder is a window or session store partition.
type holder interface{ HoldFrom(pos int64) }

func newWindowHolds(store, metaKey string) *finalHolds {
	return &finalHolds{name: store, metaKey: metaKey, from: map[int32]int64{}, store: func(c *Context, partition int32) (holder, error) {
		s, err := c.windowStore(store, partition)
		if err != nil {
			return nil, err
		}
		return s.bytes, nil
	}}
}

func newSessionHolds(store, metaKey string) *finalHolds {
	return &finalHolds{name: store, metaKey: metaKey, from: map[int32]int64{}, store: func(c *Context, partition int32) (holder, error) {
		s, err := c.sessionStore(store, partition)
		if err != nil {
			return nil, err
		}
		return s.bytes, nil
	}}
}

// ensure holds the partition's windows after the emitted position the first time the
// processor meets the partition: after a restart, before its first commit sweeps the store.
func (h *finalHolds) ensure(c *Context, partition int32) error {
	if _, ok := h.from[partition]; ok {
		return nil
	}
	// Opening the store partition first opens its metadata too.
	s, err := h.store(c, partition)
	if err != nil {
		return err
	}
	last, err := c.topology.emittedPosition(h.name, partition, h.metaKey)
	if err != nil {
		return err
	}
	s.HoldFrom(last + 1)
	h.from[partition] = last + 1
	return nil
}

// ensureAll holds every task partition's: the commit barrier runs it, so that no commit
// sweeps a window restored before the processor met its partition.
func (h *finalHolds) ensureAll(c *Context) error {
	return c.forEachTask(func(partition int32) error { return h.ensure(c, partition) })
}

// emitted releases the windows up to upper, whose final results are out.
func (h *finalHolds) emitted(s holder, partition int32, upper int64) {
	if upper+1 > h.from[partition] {
		s.HoldFrom(upper + 1)
		h.from[partition] = upper + 1
	}
}

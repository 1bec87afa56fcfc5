package pipeline

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// SessionWindows group a key's records into sessions separated by more than Gap ms of
// inactivity (Kafka Streams' SessionWindows). A session [start, end] is inclusive.
type SessionWindows struct {
	Gap   int64
	Grace int64
}

// Validate applies Kafka Streams' checks: gap > 0, grace ≥ 0.
func (w SessionWindows) Validate() error {
	switch {
	case w.Gap <= 0:
		return fmt.Errorf("session inactivity gap must be larger than zero, not %d", w.Gap)
	case w.Grace < 0:
		return fmt.Errorf("grace period must not be negative, not %d", w.Grace)
	}
	return nil
}

// SessionWindowedSerde writes a session key as Kafka Streams' SessionWindowedSerializer
// does: [inner key bytes][8-byte big-endian session end][8-byte big-endian session start].
type SessionWindowedSerde struct{ Inner Serde }

// Name implements Serde.
func (s SessionWindowedSerde) Name() string { return "session-windowed-" + s.Inner.Name() }

// Serialize implements Serde; it takes a Windowed, or a table {key=, window={start=, end=}}
// as a script may rebuild one.
func (s SessionWindowedSerde) Serialize(topic string, headers Headers, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	w, err := windowedKeyOf(v, true, "session windowed key serde")
	if err != nil {
		return nil, err
	}
	kb, err := s.Inner.Serialize(topic, headers, w.Key)
	if err != nil {
		return nil, err
	}
	// kb may be the key's own memory (TimeWindowedSerde.Serialize).
	kb = binary.BigEndian.AppendUint64(kb[:len(kb):len(kb)], uint64(w.End))
	return binary.BigEndian.AppendUint64(kb, uint64(w.Start)), nil
}

// Deserialize implements Serde.
func (s SessionWindowedSerde) Deserialize(topic string, headers Headers, data []byte) (any, error) {
	if len(data) == 0 {
		return nil, nil
	}
	if len(data) < 16 {
		return nil, fmt.Errorf("session windowed key serde: %d bytes is too short for a session key", len(data))
	}
	n := len(data) - 16
	k, err := s.Inner.Deserialize(topic, headers, data[:n])
	if err != nil {
		return nil, err
	}
	end := int64(binary.BigEndian.Uint64(data[n : n+8]))
	start := int64(binary.BigEndian.Uint64(data[n+8:]))
	return Windowed{Key: k, Start: start, End: end}, nil
}

// Merger combines the aggregates of two sessions of rec.Key (Kafka Streams' Merger).
type Merger func(rec Record, agg1, agg2 any) (any, error)

// SessionWindowedKStream is a grouped stream with session windows (Kafka Streams'
// SessionWindowedKStream).
type SessionWindowedKStream struct {
	g           *KGroupedStream
	w           SessionWindows
	emitOnClose bool
}

// WindowedBySession adds session windows to the grouping.
func (g *KGroupedStream) WindowedBySession(w SessionWindows) (*SessionWindowedKStream, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return &SessionWindowedKStream{g: g, w: w}, nil
}

// EmitOnWindowClose makes the aggregation forward each session once, when the global
// watermark closes it (end + gap + grace < watermark), instead of on every update.
func (t *SessionWindowedKStream) EmitOnWindowClose(onClose bool) { t.emitOnClose = onClose }

// Count counts records per key and session; null values count too.
func (t *SessionWindowedKStream) Count(m Materialized, longSerde Serde, name string) (*KTable, error) {
	if m.Given && m.StoreName == "" {
		t.g.s.b.index++
	}
	if m.Serdes.Value == nil {
		m.Serdes.Value = longSerde
	}
	return t.aggregate("KSTREAM-AGGREGATE-", m, name, &sessionAggregate{
		init: func() (any, error) { return int64(0), nil },
		agg: func(_ Record, agg any) (any, error) {
			n, _ := agg.(int64)
			return n + 1, nil
		},
		merge: func(_ Record, a, b any) (any, error) {
			x, _ := a.(int64)
			y, _ := b.(int64)
			return x + y, nil
		},
	})
}

// Reduce combines values per key and session; merging two sessions reduces their
// aggregates, as Kafka Streams does.
func (t *SessionWindowedKStream) Reduce(reducer Aggregator, m Materialized, name string) (*KTable, error) {
	if m.Serdes.Value == nil {
		m.Serdes.Value = t.g.s.serdes.Value
	}
	agg := func(rec Record, agg any) (any, error) {
		if agg == nil {
			return rec.Value, nil
		}
		return reducer(rec, agg)
	}
	return t.aggregate("KSTREAM-REDUCE-", m, name, &sessionAggregate{
		init: func() (any, error) { return nil, nil },
		agg:  agg,
		merge: func(rec Record, a, b any) (any, error) {
			rec.Value = b
			return agg(rec, a)
		},
	})
}

// Aggregate folds values per key and session; merge combines two sessions' aggregates.
func (t *SessionWindowedKStream) Aggregate(init Initializer, agg Aggregator, merge Merger, m Materialized, name string) (*KTable, error) {
	return t.aggregate("KSTREAM-AGGREGATE-", m, name, &sessionAggregate{init: init, agg: agg, merge: merge})
}

func (t *SessionWindowedKStream) aggregate(prefix string, m Materialized, name string, proto *sessionAggregate) (*KTable, error) {
	w := t.w
	table, err := t.g.aggregateWith(prefix, m, name, func(storeName string, serdes Serdes) (*StoreSpec, error) {
		// Kafka's default retention, also when emitting on close: the store holds a session
		// the watermark has not closed yet past it (finalHolds), and deletes one once
		// emitted.
		retention, err := m.sessionRetention(storeName, w)
		return &StoreSpec{Name: storeName, Type: SessionStoreType, Serdes: serdes, Logged: !m.LoggingDisabled, TopicConfig: m.TopicConfig, CachingDisabled: m.CachingDisabled, Retention: retention}, err
	}, func(storeName string, oldValues *bool) Processor {
		p := *proto
		p.store, p.windows, p.oldValues, p.emitOnClose = storeName, w, oldValues, t.emitOnClose
		return &p
	})
	if err != nil {
		return nil, err
	}
	table.serdes.Key = SessionWindowedSerde{Inner: table.serdes.Key}
	return table, nil
}

// sessionAggregate is Kafka's KStreamSessionWindowAggregate: a record merges with
// every session of its key at most gap away, the merged-away sessions are removed (and
// tombstoned downstream), and results carry the session end as timestamp.
type sessionAggregate struct {
	ctx       *Context
	store     string
	windows   SessionWindows
	init      Initializer
	agg       Aggregator
	merge     Merger
	oldValues *bool
	time      windowTime
	// emitOnClose forwards each session once, when the watermark closes it; holds keep the
	// sessions waiting for it in the store.
	emitOnClose bool
	holds       *finalHolds
}

func (p *sessionAggregate) Init(ctx *Context) error {
	p.ctx = ctx
	p.time = sessionWindowsTime(ctx, p.windows, p.emitOnClose)
	if p.emitOnClose {
		p.holds = newSessionHolds(p.store, emittedSessionMeta)
		p.time.onClose(p.emitClosed)
		ctx.onCommit(func() error { return p.holds.ensureAll(ctx) })
	}
	return nil
}

func (p *sessionAggregate) Process(rec Record) error {
	if rec.Key == nil {
		p.ctx.Drop(DropNullKey)
		return nil
	}
	st := p.time.observe(rec.Partition, rec.Timestamp)
	if err := p.process(rec, st); err != nil {
		return err
	}
	return p.time.closeOn(st)
}

// process merges the record into its key's sessions, st being the operator's stream time.
func (p *sessionAggregate) process(rec Record, st int64) error {
	gap := p.windows.Gap
	store, err := p.ctx.sessionStore(p.store, rec.Partition)
	if err != nil {
		return err
	}
	if p.emitOnClose {
		if err := p.holds.ensure(p.ctx, rec.Partition); err != nil {
			return err
		}
	}
	found, err := p.overlapping(store, rec.Key, rec.Timestamp-gap, rec.Timestamp+gap)
	if err != nil {
		return err
	}
	agg, err := p.init()
	if err != nil {
		return err
	}
	start, end := rec.Timestamp, rec.Timestamp
	for _, s := range found {
		if agg, err = p.merge(rec, agg, s.Value); err != nil {
			return err
		}
		start, end = min(start, s.Start), max(end, s.End)
	}
	if !p.time.admits(st, end) {
		return nil
	}
	if start != rec.Timestamp || end != rec.Timestamp {
		for _, s := range found {
			if err := store.Remove(rec.Key, s.Start, s.End, rec.Timestamp); err != nil {
				return err
			}
			if p.emitOnClose {
				continue
			}
			c := Change{}
			if *p.oldValues {
				c.Old = s.Value
			}
			if err := p.forward(rec, s.Start, s.End, c); err != nil {
				return err
			}
		}
	}
	if agg, err = p.agg(rec, agg); err != nil {
		return err
	}
	if _, err := store.Put(rec.Key, start, end, agg, rec.Timestamp); err != nil {
		return err
	}
	if p.emitOnClose {
		return nil
	}
	return p.forward(rec, start, end, Change{New: agg})
}

func (p *sessionAggregate) overlapping(store *SessionStore, key any, earliestEnd, latestStart int64) ([]Session, error) {
	it, err := store.FindSessions(key, earliestEnd, latestStart, false)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []Session
	for it.Next() {
		out = append(out, it.Session())
	}
	return out, it.Err()
}

// forward sends a session's update or tombstone. Kafka Streams 4.4 builds it as a new record
// (key, change, session end), so it carries none of the input record's headers.
func (p *sessionAggregate) forward(rec Record, start, end int64, c Change) error {
	rec.Key, rec.Value, rec.Timestamp, rec.Headers = Windowed{Key: rec.Key, Start: start, End: end}, c, end, nil
	return p.ctx.Forward(rec)
}

// emittedSessionMeta is the store metadata key holding the largest session end already
// emitted, so that a restart (or a replayed epoch) never emits a final result twice.
const emittedSessionMeta = "emit-on-close.emitted-session-end"

// emitClosed forwards, by session end, every session of the task that the watermark (in
// task time, the operator's stream time) has closed since the last emission: sessions whose
// end + gap + grace < watermark.
func (p *sessionAggregate) emitClosed(wm int64) error {
	upper := p.time.lastClosed(wm) // the last end whose session is closed
	if upper < 0 {
		return nil
	}
	return p.ctx.forEachTask(func(partition int32) error { return p.emitPartition(partition, upper) })
}

// emitPartition forwards the partition's sessions ending in (last emitted, upper], by end,
// then start, then key (Kafka's time-ordered session store), and deletes them (see
// windowAggregate.emitPartition for why).
func (p *sessionAggregate) emitPartition(partition int32, upper int64) error {
	if err := p.holds.ensure(p.ctx, partition); err != nil {
		return err
	}
	store, err := p.ctx.sessionStore(p.store, partition)
	if err != nil {
		return err
	}
	err = p.ctx.emitFinalResults(p.store, partition, emittedSessionMeta, upper,
		func(last int64) ([]finalResult, error) {
			it := store.iter(store.bytes.FetchHeld(last+1, upper))
			var closed []finalResult
			for it.Next() {
				s := it.Session()
				closed = append(closed, finalResult{pos: s.End, key: s.Key, start: s.Start, end: s.End, value: s.Value, timestamp: s.End})
			}
			err := it.Err()
			it.Close()
			// The store iterates by key first.
			sort.SliceStable(closed, func(i, j int) bool {
				if closed[i].end != closed[j].end {
					return closed[i].end < closed[j].end
				}
				return closed[i].start < closed[j].start
			})
			return closed, err
		},
		func(r finalResult) error { return store.Remove(r.key, r.start, r.end, r.end) })
	if err == nil {
		p.holds.emitted(store.bytes, partition, upper)
	}
	return err
}

package pipeline

import (
	"encoding/binary"
	"fmt"
)

// TimeWindows are fixed-size windows, tumbling (advance = size) or hopping (Kafka Streams'
// TimeWindows). Times are milliseconds.
type TimeWindows struct {
	Size    int64
	Advance int64
	Grace   int64
}

// Validate applies Kafka Streams' checks: size > 0, 0 < advance ≤ size, grace ≥ 0.
func (w TimeWindows) Validate() error {
	switch {
	case w.Size <= 0:
		return fmt.Errorf("window size must be larger than zero, not %d", w.Size)
	case w.Advance <= 0 || w.Advance > w.Size:
		return fmt.Errorf("window advance must be larger than zero and at most the window size %d, not %d", w.Size, w.Advance)
	case w.Grace < 0:
		return fmt.Errorf("grace period must not be negative, not %d", w.Grace)
	}
	return nil
}

// windowsFor gives the windows ts falls in as the first one's start and their number (they
// start every Advance from there, up to ts), with no window starting below 0
// (TimeWindows#windowsFor), and no addition past ts that could overflow.
func (w TimeWindows) windowsFor(ts int64) (first int64, n int) {
	if ts < 0 {
		return 0, 0
	}
	first = max(0, ts-w.Size+w.Advance) / w.Advance * w.Advance
	return first, int((ts-first)/w.Advance) + 1
}

// Windowed is a windowed key (Kafka Streams' Windowed<K>): the key and its window
// [Start, End).
type Windowed struct {
	Key   any
	Start int64
	End   int64
}

func (w Windowed) String() string { return fmt.Sprintf("[%v@%d/%d]", w.Key, w.Start, w.End) }

// TimeWindowedSerde writes a windowed key as Kafka Streams' TimeWindowedSerializer does:
// [inner key bytes][8-byte big-endian window start]. Reading needs the window size:
// end = start + size (Long.MAX_VALUE on overflow); with Size 0 (not known) reading fails,
// as TimeWindowedDeserializer does without a window size.
type TimeWindowedSerde struct {
	Inner Serde
	Size  int64
}

// Name implements Serde.
func (s TimeWindowedSerde) Name() string { return "windowed-" + s.Inner.Name() }

// Serialize implements Serde; it takes a Windowed, or a table {key=, window={start=}} as a
// script may rebuild one.
func (s TimeWindowedSerde) Serialize(topic string, headers Headers, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	w, err := windowedKeyOf(v, false, "windowed key serde")
	if err != nil {
		return nil, err
	}
	kb, err := s.Inner.Serialize(topic, headers, w.Key)
	if err != nil {
		return nil, err
	}
	// kb may be the key's own memory (a []byte key): appending within its capacity would
	// change the bytes of every window serialised from it before.
	return binary.BigEndian.AppendUint64(kb[:len(kb):len(kb)], uint64(w.Start)), nil
}

// Deserialize implements Serde.
func (s TimeWindowedSerde) Deserialize(topic string, headers Headers, data []byte) (any, error) {
	if len(data) == 0 {
		return nil, nil
	}
	if s.Size <= 0 {
		return nil, fmt.Errorf("serde %s: the window size needs to be set, through s.WindowedSerdes.timeWindowedSerdeFrom(inner, size) or the window.size.ms config", s.Name())
	}
	if len(data) < 8 {
		return nil, fmt.Errorf("windowed key serde: %d bytes is too short for a windowed key", len(data))
	}
	k, err := s.Inner.Deserialize(topic, headers, data[:len(data)-8])
	if err != nil {
		return nil, err
	}
	start := int64(binary.BigEndian.Uint64(data[len(data)-8:]))
	return Windowed{Key: k, Start: start, End: windowEnd(start, s.Size)}, nil
}

// windowedKeyOf takes a Windowed, or a table {key=, window={start=, end=}} as a script may
// rebuild one; needEnd says the table must give the end too (session keys). what names the
// serde in errors.
func windowedKeyOf(v any, needEnd bool, what string) (Windowed, error) {
	switch x := v.(type) {
	case Windowed:
		return x, nil
	case map[string]any:
		win, _ := x["window"].(map[string]any)
		start, okStart := win["start"].(int64)
		end, okEnd := win["end"].(int64)
		switch {
		case needEnd && (!okStart || !okEnd):
			return Windowed{}, fmt.Errorf("%s: a table key needs window.start and window[\"end\"] (milliseconds)", what)
		case !okStart:
			return Windowed{}, fmt.Errorf("%s: a table key needs window.start (milliseconds)", what)
		}
		return Windowed{Key: x["key"], Start: start, End: end}, nil
	default:
		return Windowed{}, fmt.Errorf("%s: cannot serialize a %T (want a windowed key)", what, v)
	}
}

// TimeWindowedKStream is a grouped stream with time windows (Kafka Streams'
// TimeWindowedKStream).
type TimeWindowedKStream struct {
	g           *KGroupedStream
	w           TimeWindows
	emitOnClose bool
}

// EmitOnWindowClose makes the aggregation forward each window once, when the global
// watermark closes it (end + grace ≤ watermark), instead of on every update
// (EmitStrategy.onWindowClose).
func (t *TimeWindowedKStream) EmitOnWindowClose(onClose bool) { t.emitOnClose = onClose }

// WindowedBy adds time windows to the grouping.
func (g *KGroupedStream) WindowedBy(w TimeWindows) (*TimeWindowedKStream, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return &TimeWindowedKStream{g: g, w: w}, nil
}

// Count counts records per key and window; null values count too.
func (t *TimeWindowedKStream) Count(m Materialized, longSerde Serde, name string) (*KTable, error) {
	if m.Given && m.StoreName == "" {
		t.g.s.b.index++
	}
	if m.Serdes.Value == nil {
		m.Serdes.Value = longSerde
	}
	return t.aggregate("KSTREAM-AGGREGATE-", m, name, &windowAggregate{
		init: func() (any, error) { return int64(0), nil },
		agg: func(_ Record, agg any) (any, error) {
			n, _ := agg.(int64)
			return n + 1, nil
		},
	})
}

// Reduce combines values per key and window.
func (t *TimeWindowedKStream) Reduce(reducer Aggregator, m Materialized, name string) (*KTable, error) {
	if m.Serdes.Value == nil {
		m.Serdes.Value = t.g.s.serdes.Value
	}
	return t.aggregate("KSTREAM-REDUCE-", m, name, &windowAggregate{agg: reducer, reduce: true})
}

// Aggregate folds values per key and window.
func (t *TimeWindowedKStream) Aggregate(init Initializer, agg Aggregator, m Materialized, name string) (*KTable, error) {
	return t.aggregate("KSTREAM-AGGREGATE-", m, name, &windowAggregate{init: init, agg: agg})
}

func (t *TimeWindowedKStream) aggregate(prefix string, m Materialized, name string, proto *windowAggregate) (*KTable, error) {
	w := t.w
	table, err := t.g.aggregateWith(prefix, m, name, func(storeName string, serdes Serdes) (*StoreSpec, error) {
		// Kafka's default retention, also when emitting on close: the store holds a window
		// the watermark has not closed yet past it (finalHolds), and deletes one once
		// emitted.
		retention, err := m.timeRetention(storeName, w)
		return &StoreSpec{Name: storeName, Type: TimestampedWindowStoreType, Serdes: serdes, Logged: !m.LoggingDisabled, TopicConfig: m.TopicConfig, CachingDisabled: m.CachingDisabled,
			WindowSize: w.Size, Retention: retention}, err
	}, func(storeName string, oldValues *bool) Processor {
		p := *proto
		p.store, p.windows, p.oldValues, p.emitOnClose = storeName, w, oldValues, t.emitOnClose
		return &p
	})
	if err != nil {
		return nil, err
	}
	table.serdes.Key = TimeWindowedSerde{Inner: table.serdes.Key, Size: w.Size}
	return table, nil
}

// windowAggregate is KStreamWindowAggregate: a record updates every window it falls in that
// is still open on the operator's stream time (end > streamTime − grace); for each window
// already closed it is dropped and counted as late.
type windowAggregate struct {
	ctx       *Context
	emit      func(Record) error // forward, or through the record cache
	store     string
	windows   TimeWindows
	init      Initializer
	agg       Aggregator
	reduce    bool
	oldValues *bool
	time      windowTime
	// emitOnClose forwards each window once, when the watermark closes it; holds keep the
	// windows waiting for it in the store.
	emitOnClose bool
	holds       *finalHolds
	// finals, when set, is the suppression taking its final results from this
	// aggregation's store: it sees each window written and answers reads of the open ones
	// (suppress_final.go).
	finals *finalSuppress
}

func (p *windowAggregate) Init(ctx *Context) error {
	p.ctx = ctx
	p.time = timeWindowsTime(ctx, p.windows, p.emitOnClose)
	if p.emitOnClose {
		// Final results bypass the record cache, as in Kafka Streams.
		p.emit = ctx.Forward
		p.holds = newWindowHolds(p.store, emittedMeta)
		p.time.onClose(p.emitClosed)
		ctx.onCommit(func() error { return p.holds.ensureAll(ctx) })
	} else {
		p.emit = ctx.emitter(p.store)
	}
	return nil
}

func (p *windowAggregate) Process(rec Record) error {
	if rec.Key == nil {
		p.ctx.Drop(DropNullKey)
		return nil
	}
	st := p.time.observe(rec.Partition, rec.Timestamp)
	store, err := p.ctx.windowStore(p.store, rec.Partition)
	if err != nil {
		return err
	}
	if p.emitOnClose {
		if err := p.holds.ensure(p.ctx, rec.Partition); err != nil {
			return err
		}
	}
	var kb []byte
	first, n := p.windows.windowsFor(rec.Timestamp)
	for i := range n {
		start := first + int64(i)*p.windows.Advance
		if !p.time.admits(st, start) {
			continue
		}
		if kb == nil {
			if kb, err = store.key(rec.Key); err != nil {
				return err
			}
		}
		end := windowEnd(start, p.windows.Size)
		old, found, open, err := p.fetch(store, rec, kb, start, end)
		if err != nil {
			return err
		}
		ts := rec.Timestamp
		var base any
		switch {
		case found && old.Value != nil:
			base, ts = old.Value, max(ts, old.Timestamp)
		case p.reduce:
		default:
			if base, err = p.init(); err != nil {
				return err
			}
		}
		var next any
		if p.reduce && base == nil {
			next = rec.Value
		} else if next, err = p.agg(rec, base); err != nil {
			return err
		}
		vb, err := store.valueBytes(next)
		if err != nil {
			return err
		}
		if _, err := store.putSerialized(kb, start, vb, ts); err != nil {
			return err
		}
		if p.finals != nil {
			if err := p.finals.written(rec, kb, start, end, vb, ts, open); err != nil {
				return err
			}
		}
		if p.emitOnClose {
			continue
		}
		c := Change{New: next}
		if *p.oldValues {
			c.Old = base
		}
		out := rec
		out.Key, out.Value, out.Timestamp = Windowed{Key: rec.Key, Start: start, End: end}, c, ts
		if err := p.emit(out); err != nil {
			return err
		}
	}
	return p.time.closeOn(st)
}

// fetch reads the window of rec's key starting at start: from the suppression taking the
// final results, while it holds the window, else from the store. open is the suppression's
// entry of the window, when it has one, for written.
func (p *windowAggregate) fetch(store *WindowStore, rec Record, kb []byte, start, end int64) (w Window, found bool, open *openWindow, err error) {
	if p.finals != nil {
		ow, ok, err := p.finals.read(rec.Partition, kb, start, end)
		if err != nil || (ok && (ow == nil || ow.value == nil)) {
			return Window{}, false, ow, err
		}
		if ok {
			v, err := store.value(ow.value)
			return Window{Key: rec.Key, Start: start, End: end, Value: v, Timestamp: ow.ts}, err == nil, ow, err
		}
	}
	w, found, err = store.fetchSerialized(rec.Key, kb, start)
	return w, found, nil, err
}

// emittedMeta is the store metadata key holding the largest window start already emitted,
// so that a restart (or a replayed epoch) never emits a final result twice.
const emittedMeta = "emit-on-close.emitted-start"

// emitClosed forwards, in window-start order, every window of the task that the watermark
// (in task time, the operator's stream time) has closed since the last emission: windows
// whose end + grace ≤ watermark.
func (p *windowAggregate) emitClosed(wm int64) error {
	upper := p.time.lastClosed(wm) // the last start whose window is closed
	if upper < 0 {
		return nil
	}
	return p.ctx.forEachTask(func(partition int32) error { return p.emitPartition(partition, upper) })
}

// emitPartition forwards the partition's windows with start in (last emitted, upper] and
// deletes them. Kafka Streams keeps an emitted window until the retention drops it, and its
// last emitted position in the offset commit; here the position stays in the local store
// only, and the deletion, which the changelog carries, is what keeps a store restored from
// it (a replayed epoch, a standby taking over) from emitting the window again.
func (p *windowAggregate) emitPartition(partition int32, upper int64) error {
	if err := p.holds.ensure(p.ctx, partition); err != nil {
		return err
	}
	store, err := p.ctx.windowStore(p.store, partition)
	if err != nil {
		return err
	}
	err = p.ctx.emitFinalResults(p.store, partition, emittedMeta, upper,
		func(last int64) ([]finalResult, error) {
			return closedWindows(store, last, upper, func(w Window) int64 { return w.End })
		},
		func(r finalResult) error {
			_, err := store.Put(r.key, nil, r.start, r.timestamp)
			return err
		})
	if err == nil {
		p.holds.emitted(store.bytes, partition, upper)
	}
	return err
}

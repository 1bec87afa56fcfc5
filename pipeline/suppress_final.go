package pipeline

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Final results of a time-windowed aggregation that suppress(untilWindowCloses) follows
// directly (issue 16). The aggregation's window store already holds every window's latest
// value and timestamp, so the suppression does not copy each update into its buffer store:
// the aggregation hands it each window it writes, which it keeps in memory, ordered by
// window end, while the window is open, and emits from there, with the output
// KTableSuppressProcessor would give (same records, order, record context and drops).
// The aggregation also reads open windows from there instead of the store. The window store
// holds every open window (HoldFrom), also one whose start fell behind its retention while
// the watermark lagged: queries no longer see it, but a restart reads it back. The buffer
// store keeps only what the window store cannot give back after a restart or on another
// agent:
//   - per partition, the end up to which every window has closed, under finalMarkerKey,
//     written at the commit barrier: with the window store, it tells which windows are
//     still open, and its changelog carries it to a standby;
//   - the windows whose latest update carried headers: Kafka Streams' buffer entries, in
//     its layout (and, from state written before the window store held open windows, the
//     windows that had fallen behind its retention).
// What a restart does lose is the offset and topic of an open window's latest update
// without headers: the window's final result then carries offset -1 and no topic
// (docs/COMPATIBILITY.md).

// finalMarkerKey keys the emitted-up-to end in the buffer store. Every windowed key is at
// least 8 bytes long (the window start), so it cannot be one.
var finalMarkerKey = []byte{0}

// windowFinals is what Suppress learns at build time about a windowed aggregation it may
// take its final results from.
type windowFinals struct {
	store string // the aggregation's window store
	size  int64
	// retention of the window store: a window whose start is older than its stream time
	// (largest start put) − retention + 1 is no longer visible there.
	retention int64
}

// finalsSource reports the window store suppress may emit final results from: the table
// is the very table of a time-windowed aggregation emitting on update, the only writer of
// its store, no other suppression takes its final results from it, the buffer is unbounded
// (a bounded one counts its entries' bytes), and the window store has a changelog if the
// buffer has one (a standby restores the open windows from it).
func (t *KTable) finalsSource(s Suppressed) (windowFinals, bool) {
	if !s.UntilWindowCloses || s.Buffer.MaxRecords != 0 || s.Buffer.MaxBytes != 0 || t.node.factory == nil || t.node.finalsTaken {
		return windowFinals{}, false
	}
	wa, ok := t.node.factory().(*windowAggregate)
	if !ok || wa.emitOnClose {
		return windowFinals{}, false
	}
	for _, n := range t.b.nodes {
		if n != t.node && slices.Contains(n.Stores, wa.store) {
			return windowFinals{}, false
		}
	}
	spec := t.b.stores[wa.store]
	if !spec.Logged && !s.Buffer.LoggingDisabled {
		return windowFinals{}, false
	}
	t.node.finalsTaken = true
	return windowFinals{store: wa.store, size: spec.WindowSize, retention: spec.Retention}, true
}

// finalSuppress is suppress(untilWindowCloses) reading its final results from the window
// store (see the top of the file).
type finalSuppress struct {
	ctx        *Context
	src        windowFinals
	grace      int64
	store      string // the buffer store
	valueSerde Serde
	time       windowTime
	parts      map[int32]*finalPart
	due        []dueFinal // reused by emitClosed
	kbuf       []byte     // reused by result
}

// finalPart is one task partition's open windows.
type finalPart struct {
	partition int32
	buf       *KeyValueStore // the partition of the buffer store
	windows   *WindowStore   // and of the window store
	// emitted: every window ending at or before it has closed.
	emitted int64
	// savedEmitted is what the marker in the buffer store says.
	savedEmitted int64
	// maxStart is the window store's stream time.
	maxStart int64
	ends     []int64 // ascending, each with windows in byEnd
	// byEnd holds the open windows by end, then by key serialised for the window store.
	byEnd map[int64]map[string]*openWindow
	// canonical: the buffer store's serdes are the window store's, canonical, so a final
	// result's key and value are read from the window store's bytes at once (see result).
	canonical bool
}

// openWindow is a window's latest write, with the record context of the update that made
// it, and whether the buffer store holds it too.
type openWindow struct {
	key     any
	start   int64
	value   []byte // as the window store serialises it; nil: deleted
	ts      int64
	headers Headers
	topic   string
	offset  int64
	// bufKey is the windowed key serialised for the buffer store, once needed.
	bufKey   string
	buffered bool
}

type dueFinal struct {
	end       int64
	partition int32
	kb        string // the key serialised for the window store
	w         *openWindow
}

func (p *finalSuppress) Init(ctx *Context) error {
	p.ctx = ctx
	p.time = suppressTime(ctx, Suppressed{UntilWindowCloses: true}, p.grace)
	ctx.onWatermark(p.emitClosed)
	ctx.onCommit(p.commit)
	for _, proc := range ctx.parents() {
		if wa, ok := proc.(*windowAggregate); ok && wa.store == p.src.store {
			wa.finals = p
			return nil
		}
	}
	return fmt.Errorf("suppress: the windowed aggregation of store %s is not its parent", p.src.store)
}

// Process sees the aggregation's updates as suppress would (through the record cache) and
// drops, as suppress does, those of windows already closed; the open windows' updates
// reached it through written already.
func (p *finalSuppress) Process(rec Record) error {
	if rec.Key == nil {
		p.ctx.Drop(DropNullKey)
		return nil
	}
	w, ok := rec.Key.(Windowed)
	if !ok {
		return fmt.Errorf("suppress untilWindowCloses: the key %v is not windowed", rec.Key)
	}
	part, err := p.partition(rec.Partition)
	if err != nil {
		return err
	}
	if p.closed(part, w.End) {
		// The final result is out (or the window closed empty): it is never revised.
		p.ctx.Drop(DropWindowClosed)
	}
	return nil
}

// closed reports whether a window of the partition has closed: by the watermark, or, after
// a restart, by the marker.
func (p *finalSuppress) closed(part *finalPart, end int64) bool {
	return end <= part.emitted || p.time.closedByWatermark(end)
}

// read answers the aggregation's read of a window the suppression knows: an open one
// (its entry, nil when it has none), or one the window store no longer shows (as absent).
// ok is false for a closed window: the window store has it.
func (p *finalSuppress) read(partition int32, kb []byte, start, end int64) (ow *openWindow, ok bool, err error) {
	part, err := p.partition(partition)
	if err != nil || p.closed(part, end) {
		return nil, false, err
	}
	if start < memRetentionCutoff(part.maxStart, p.src.retention) {
		return nil, true, nil
	}
	return part.byEnd[end][string(kb)], true, nil
}

// written takes a window the aggregation has written (vb nil: deleted) for the update rec,
// as suppress would take the update: only while the window is open. ow is the window's
// entry as read found it, if it did.
func (p *finalSuppress) written(rec Record, kb []byte, start, end int64, vb []byte, ts int64, ow *openWindow) error {
	part, err := p.partition(rec.Partition)
	if err != nil {
		return err
	}
	part.maxStart = max(part.maxStart, start)
	if !p.closed(part, end) {
		if ow == nil {
			group := part.group(end)
			if ow = group[string(kb)]; ow == nil {
				ow = &openWindow{key: rec.Key, start: start}
				group[string(kb)] = ow
			}
		}
		ow.value, ow.ts, ow.headers, ow.topic, ow.offset = vb, ts, rec.Headers, rec.Topic, rec.Offset
		if ow.buffered || len(rec.Headers) > 0 {
			return p.writeEntry(part, end, ow)
		}
	}
	return nil
}

// bufferKey is the window's key in the buffer store.
func (p *finalSuppress) bufferKey(part *finalPart, end int64, ow *openWindow) (string, error) {
	if ow.bufKey == "" {
		kb, err := part.buf.key(Windowed{Key: ow.key, Start: ow.start, End: end})
		if err != nil {
			return "", err
		}
		ow.bufKey = string(kb)
	}
	return ow.bufKey, nil
}

// bufferValue is the window's value as the buffer store's serde gives it back.
func (p *finalSuppress) bufferValue(part *finalPart, ow *openWindow) ([]byte, any, error) {
	if ow.value == nil {
		return nil, nil, nil
	}
	v, err := part.windows.value(ow.value)
	if err != nil {
		return nil, nil, err
	}
	b, err := bufferValueBytes(p.valueSerde, part.buf, v)
	if err != nil {
		return nil, nil, err
	}
	v, err = bufferValue(p.valueSerde, part.buf, b)
	return b, v, err
}

// writeEntry keeps a window's latest update in the buffer store, as suppress would.
func (p *finalSuppress) writeEntry(part *finalPart, end int64, ow *openWindow) error {
	kb, err := p.bufferKey(part, end, ow)
	if err != nil {
		return err
	}
	e := bufferedChange{Timestamp: ow.ts, Offset: ow.offset, Topic: ow.topic, Partition: part.partition,
		Headers: ow.headers, BufferTime: end}
	if e.New, _, err = p.bufferValue(part, ow); err != nil {
		return err
	}
	ow.buffered = true
	return part.buf.bytes.Put([]byte(kb), e.encode(), ow.ts, nil)
}

func (part *finalPart) saveEmitted(end int64) error {
	part.savedEmitted = end
	return part.buf.bytes.Put(finalMarkerKey, binary.BigEndian.AppendUint64(nil, uint64(end)), -1, nil)
}

// emitClosed forwards every open window the watermark has closed (end + grace ≤
// watermark), in the order of suppress's buffers: by window end, then serialised key, then
// partition.
func (p *finalSuppress) emitClosed(wm int64) error {
	if len(p.parts) == 0 {
		// The task's partition whether or not it saw a record since the start: after a
		// restart, the stored windows of a partition that has not delivered yet close too.
		err := p.ctx.forEachTask(func(partition int32) error {
			_, err := p.partition(partition)
			return err
		})
		if err != nil {
			return err
		}
	}
	upper := p.time.lastClosed(wm)
	// With canonical serdes everywhere, due windows sort without their buffer keys.
	canonical := true
	for _, part := range p.parts {
		canonical = canonical && part.canonical
	}
	due := p.due[:0]
	for partition, part := range p.parts {
		n := 0
		for _, end := range part.ends {
			if end > upper {
				break
			}
			for kb, ow := range part.byEnd[end] {
				if !canonical {
					if _, err := p.bufferKey(part, end, ow); err != nil {
						return err
					}
				}
				due = append(due, dueFinal{end: end, partition: partition, kb: kb, w: ow})
			}
			delete(part.byEnd, end)
			n++
		}
		part.ends = part.ends[n:]
		if upper > part.emitted {
			part.emitted = upper
			part.hold(p.src.size)
		}
	}
	slices.SortFunc(due, func(a, b dueFinal) int {
		if a.end != b.end {
			return cmp.Compare(a.end, b.end)
		}
		if c := compareBufferKeys(a, b, canonical); c != 0 {
			return c
		}
		return cmp.Compare(a.partition, b.partition)
	})
	for i := range due {
		if err := p.emit(due[i]); err != nil {
			return err
		}
		due[i] = dueFinal{}
	}
	p.due = due[:0]
	return nil
}

// commit writes, at the commit barrier, what a restart needs: each partition's
// emitted-up-to end that moved (with the epoch's final results; after a restart, before the
// watermark is known again, it still says which windows closed, the stored ones that closed
// without a final result included).
func (p *finalSuppress) commit() error {
	for _, part := range p.parts {
		if part.savedEmitted >= part.emitted {
			continue
		}
		if err := part.saveEmitted(part.emitted); err != nil {
			return err
		}
	}
	return nil
}

// compareBufferKeys orders two windows of one end as their keys in the buffer store sort.
// With canonical serdes a buffer key is the window store's key followed by the window start,
// the same for both, so the window store keys decide, unless one is a prefix of the other.
func compareBufferKeys(a, b dueFinal, canonical bool) int {
	if !canonical {
		return strings.Compare(a.w.bufKey, b.w.bufKey)
	}
	n := min(len(a.kb), len(b.kb))
	if a.kb[:n] != b.kb[:n] {
		return strings.Compare(a.kb, b.kb)
	}
	if len(a.kb) == len(b.kb) {
		return 0
	}
	start := binary.BigEndian.AppendUint64(nil, uint64(a.w.start))
	return bytes.Compare(append([]byte(a.kb), start...), append([]byte(b.kb), start...))
}

// emit forwards one final result, as suppress does from its buffer: key and value as the
// buffer store's serdes give them back, with the latest update's record context.
func (p *finalSuppress) emit(d dueFinal) error {
	part, ow := p.parts[d.partition], d.w
	if ow.buffered {
		if err := part.buf.bytes.Put([]byte(ow.bufKey), nil, ow.ts, nil); err != nil {
			return err
		}
	}
	if ow.value == nil {
		return nil
	}
	key, v, err := p.result(part, d)
	if err != nil {
		return err
	}
	return p.ctx.Forward(Record{Key: key, Value: Change{New: v}, Timestamp: ow.ts, Headers: ow.headers,
		Topic: ow.topic, Partition: d.partition, Offset: ow.offset})
}

// result is a final result's key and value as the buffer store's serdes give them back:
// through them, or, when they are the window store's canonical serdes, straight from the
// window store's bytes, which is the same.
func (p *finalSuppress) result(part *finalPart, d dueFinal) (any, any, error) {
	ow := d.w
	if !part.canonical {
		key, err := part.buf.keyOf([]byte(ow.bufKey))
		if err != nil {
			return nil, nil, err
		}
		_, v, err := p.bufferValue(part, ow)
		return key, v, err
	}
	p.kbuf = append(p.kbuf[:0], d.kb...)
	k, err := part.windows.keyOf(p.kbuf)
	if err != nil {
		return nil, nil, err
	}
	v, err := part.windows.value(ow.value)
	return Windowed{Key: k, Start: ow.start, End: d.end}, v, err
}

// partition opens a partition of the stores and, the first time (before the aggregation
// first writes to it), finds its open windows: after a restart, the window store's windows
// ending after the marker, and the buffer's entries. A buffer without a marker is
// suppress's own (state from before issue 16, or a new store): its entries are the open
// windows, the window store's others are closed.
func (p *finalSuppress) partition(partition int32) (*finalPart, error) {
	if part, ok := p.parts[partition]; ok {
		return part, nil
	}
	buf, err := p.ctx.store(p.store, partition)
	if err != nil {
		return nil, err
	}
	ws, err := p.ctx.windowStore(p.src.store, partition)
	if err != nil {
		return nil, err
	}
	part := &finalPart{partition: partition, buf: buf, windows: ws, emitted: math.MinInt64, savedEmitted: math.MinInt64,
		maxStart: math.MinInt64, byEnd: map[int64]map[string]*openWindow{},
		canonical: sameCanonicalSerdes(buf.spec.Serdes, ws.spec.Serdes, p.valueSerde, p.src.size)}
	marker, _, found, err := buf.bytes.Get(finalMarkerKey)
	if err != nil {
		return nil, err
	}
	if found {
		if len(marker) != 8 {
			return nil, fmt.Errorf("store %s partition %d: the final-results marker has %d bytes, not 8", p.store, partition, len(marker))
		}
		part.emitted = int64(binary.BigEndian.Uint64(marker))
		part.savedEmitted = part.emitted
	}
	if err := p.loadBuffer(part, partition); err != nil {
		return nil, err
	}
	if err := p.loadWindows(part, found); err != nil {
		return nil, err
	}
	if !found {
		if err := part.saveEmitted(part.emitted); err != nil {
			return nil, err
		}
	}
	part.hold(p.src.size)
	p.parts[partition] = part
	return part, nil
}

// loadBuffer adds the buffer store's entries to the open windows.
func (p *finalSuppress) loadBuffer(part *finalPart, partition int32) error {
	it := part.buf.bytes.Range(nil, nil, false)
	defer it.Close()
	for it.Next() {
		if string(it.Key()) == string(finalMarkerKey) {
			continue
		}
		e, err := decodeBufferedChange(it.Value())
		if err != nil {
			return fmt.Errorf("store %s partition %d: %w", p.store, partition, err)
		}
		k, err := part.buf.keyOf(it.Key())
		if err != nil {
			return err
		}
		w, ok := k.(Windowed)
		if !ok {
			return fmt.Errorf("store %s partition %d: the key %v is not windowed", p.store, partition, k)
		}
		kb, err := part.windows.key(w.Key)
		if err != nil {
			return err
		}
		ow := &openWindow{key: w.Key, start: w.Start, ts: e.Timestamp, headers: e.Headers, topic: e.Topic,
			offset: e.Offset, bufKey: string(it.Key()), buffered: true}
		v, err := bufferValue(p.valueSerde, part.buf, e.New)
		if err != nil {
			return err
		}
		if v != nil {
			if ow.value, err = part.windows.valueBytes(v); err != nil {
				return err
			}
		}
		part.group(e.BufferTime)[string(kb)] = ow
	}
	return it.Err()
}

// loadWindows adds the window store's open windows (fused state), or, for suppress's own
// state, sets the marker past its closed ones.
func (p *finalSuppress) loadWindows(part *finalPart, fused bool) error {
	from := int64(math.MinInt64)
	if fused && part.emitted > math.MinInt64+p.src.size {
		from = part.emitted - p.src.size + 1
	}
	var it WindowBytesIterator
	if fused {
		it = part.windows.bytes.FetchHeld(from)
	} else {
		it = part.windows.bytes.FetchRange(nil, nil, from, math.MaxInt64, false)
	}
	defer it.Close()
	for it.Next() {
		start := it.Start()
		end := windowEnd(start, p.src.size)
		part.maxStart = max(part.maxStart, start)
		group := part.group(end)
		if _, buffered := group[string(it.Key())]; buffered {
			continue
		}
		if !fused {
			part.emitted = max(part.emitted, end)
			continue
		}
		key, err := part.windows.keyOf(it.Key())
		if err != nil {
			return err
		}
		group[string(it.Key())] = &openWindow{key: key, start: start, value: append([]byte{}, it.Value()...),
			ts: it.Timestamp(), offset: -1}
	}
	part.dropEmpty()
	return it.Err()
}

// hold makes the window store keep the open windows, those ending after emitted, however far
// the retention moves on.
func (part *finalPart) hold(size int64) {
	from := int64(math.MinInt64)
	if part.emitted > math.MinInt64+size {
		from = part.emitted - size + 1
	}
	part.windows.bytes.HoldFrom(from)
}

// group is the partition's open windows ending at end, by serialised key.
func (part *finalPart) group(end int64) map[string]*openWindow {
	group := part.byEnd[end]
	if group == nil {
		group = map[string]*openWindow{}
		part.byEnd[end] = group
		i, _ := slices.BinarySearch(part.ends, end)
		part.ends = slices.Insert(part.ends, i, end)
	}
	return group
}

// dropEmpty forgets the ends without open windows.
func (part *finalPart) dropEmpty() {
	part.ends = slices.DeleteFunc(part.ends, func(end int64) bool {
		if len(part.byEnd[end]) == 0 {
			delete(part.byEnd, end)
			return true
		}
		return false
	})
}

// sameCanonicalSerdes reports whether the buffer store's serdes (windowed keys, values
// through valueSerde) give back what the window store's do: the buffer's key serde wraps the
// window store's key serde in windows of the same size, the values share one serde, and
// both serdes are canonical.
func sameCanonicalSerdes(buf, windows Serdes, valueSerde Serde, size int64) bool {
	bk, ok := buf.Key.(TimeWindowedSerde)
	if !ok || bk.Size != size {
		return false
	}
	ik, ok1 := bk.Inner.(CanonicalSerde)
	wk, ok2 := windows.Key.(CanonicalSerde)
	bv, ok3 := valueSerde.(CanonicalSerde)
	wv, ok4 := windows.Value.(CanonicalSerde)
	return ok1 && ok2 && ok3 && ok4 && ik == wk && bv == wv
}

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
// the watermark lagged: queries no longer see it.
//
// The buffer store holds what Kafka Streams' suppression buffer holds, in its layout: every
// open window's latest update with its record context, written at the commit barrier for
// the windows updated since the last one (one write per window and epoch, where the buffer
// of suppress's own takes every update), and deleted when the window's final result is out.
// So a restart, a standby or a Kafka Streams instance taking the application over finds the
// open windows there, and the window store's other windows closed (issue 29: handed over
// both ways). The end up to which every window has closed is processor metadata of the
// buffer store partition (local, committed with the epoch): with it a restart drops, as
// before it, an update of a window the watermark closed that its own partition's records had
// not; a partition restored from the changelog (a standby taking over, a rebuilt database)
// takes it from the window store's closed windows, as suppress's own buffer does.
//
// State written before issue 29 kept only, under finalMarkerKey, the end up to which every
// window had closed, and the open windows in the window store: it is read so and rewritten
// in the buffer's layout at the first commit barrier.

// finalMarkerKey keyed the emitted-up-to end in the buffer store before issue 29. Every
// windowed key is at least 8 bytes long (the window start), so it cannot be one.
var finalMarkerKey = []byte{0}

// finalEmittedMeta keys the emitted-up-to end in the buffer store partition's metadata.
const finalEmittedMeta = "suppress.final.emitted"

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
	// emitted: every window ending at or before it has closed; savedEmitted is what the
	// store partition's metadata says.
	emitted, savedEmitted int64
	// marker: the buffer store holds state written before issue 29 (finalMarkerKey), to
	// rewrite at the next commit barrier.
	marker bool
	// dirty are the open windows updated since the last commit barrier, by end.
	dirty map[*openWindow]int64
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
// it, and whether the buffer store holds an entry of it.
type openWindow struct {
	key     any
	start   int64
	value   []byte // as the window store serialises it; nil: deleted
	ts      int64
	headers Headers
	topic   string
	offset  int64
	// kb is the key serialised for the window store; bufKey the windowed key serialised for
	// the buffer store, once needed.
	kb, bufKey string
	buffered   bool
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
	p.time.onClose(p.emitClosed)
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
// reached it through written already. In task time the update's timestamp advances the
// suppression's stream time, on which it then emits what is due, as suppress does.
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
	if !p.time.taskTime {
		return nil
	}
	return p.time.closeOn(p.time.observe(rec.Partition, rec.Timestamp))
}

// closed reports whether a window of the partition has closed: by the watermark (in task
// time, emitted on the suppression's stream time), or, after a restart, by the marker.
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
				k := string(kb)
				ow = &openWindow{key: rec.Key, start: start, kb: k}
				group[k] = ow
			}
		}
		ow.value, ow.ts, ow.headers, ow.topic, ow.offset = vb, ts, rec.Headers, rec.Topic, rec.Offset
		part.dirty[ow] = end
	}
	return nil
}

// bufferKey is the window's key in the buffer store: with canonical serdes the window
// store's key and the window start.
func (p *finalSuppress) bufferKey(part *finalPart, end int64, ow *openWindow) (string, error) {
	if ow.bufKey == "" && part.canonical {
		ow.bufKey = string(binary.BigEndian.AppendUint64([]byte(ow.kb), uint64(ow.start)))
	}
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
	if part.canonical {
		// The buffer's value serde is the window store's, and canonical: the same bytes.
		e.New = ow.value
	} else if e.New, _, err = p.bufferValue(part, ow); err != nil {
		return err
	}
	ow.buffered = true
	return part.buf.bytes.Put([]byte(kb), e.encode(), ow.ts, nil)
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

// commit writes, at the commit barrier, the buffer entries of the open windows updated
// since the last one (in no particular order: each has a key of its own), and drops the
// marker of state written before issue 29.
func (p *finalSuppress) commit() error {
	for _, part := range p.parts {
		if part.emitted > part.savedEmitted {
			if err := p.ctx.topology.saveEmittedPosition(p.store, part.partition, finalEmittedMeta, part.emitted); err != nil {
				return err
			}
			part.savedEmitted = part.emitted
		}
		if part.marker {
			if err := part.buf.bytes.Put(finalMarkerKey, nil, -1, nil); err != nil {
				return err
			}
			part.marker = false
		}
		if len(part.dirty) == 0 {
			continue
		}
		for ow, end := range part.dirty {
			if err := p.writeEntry(part, end, ow); err != nil {
				return err
			}
		}
		clear(part.dirty)
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
	delete(part.dirty, ow)
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
// first writes to it), finds its open windows: the buffer's entries (written by this
// suppression, by suppress's own buffer or by Kafka Streams), the window store's others
// being closed; or, in state written before issue 29, the window store's windows ending
// after the marker, with the buffer's entries.
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
		maxStart: math.MinInt64, byEnd: map[int64]map[string]*openWindow{}, dirty: map[*openWindow]int64{},
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
		part.marker = true
	}
	if err := p.loadBuffer(part, partition); err != nil {
		return nil, err
	}
	if err := p.loadWindows(part, found); err != nil {
		return nil, err
	}
	saved, err := p.ctx.topology.storeProvider.Meta(p.store, partition, finalEmittedMeta)
	if err != nil {
		return nil, err
	}
	if len(saved) == 8 {
		part.savedEmitted = int64(binary.BigEndian.Uint64(saved))
		part.emitted = max(part.emitted, part.savedEmitted)
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
			offset: e.Offset, kb: string(kb), bufKey: string(it.Key()), buffered: true}
		v, err := bufferValue(p.valueSerde, part.buf, e.New)
		if err != nil {
			return err
		}
		if v != nil {
			if ow.value, err = part.windows.valueBytes(v); err != nil {
				return err
			}
		}
		part.group(e.BufferTime)[ow.kb] = ow
	}
	return it.Err()
}

// loadWindows adds the window store's open windows (state written before issue 29, with a
// marker), or else sets emitted past its closed ones.
func (p *finalSuppress) loadWindows(part *finalPart, fused bool) error {
	from := int64(math.MinInt64)
	if fused && part.emitted > math.MinInt64+p.src.size {
		from = part.emitted - p.src.size + 1
	}
	var it WindowBytesIterator
	if fused {
		it = part.windows.bytes.FetchHeld(from, math.MaxInt64)
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
		ow := &openWindow{key: key, start: start, value: append([]byte{}, it.Value()...), ts: it.Timestamp(), offset: -1, kb: string(it.Key())}
		group[ow.kb] = ow
		part.dirty[ow] = end
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

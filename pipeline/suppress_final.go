package pipeline

import (
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
// it keeps the open windows' latest updates in memory, ordered by window end, and emits them
// from there, with the output KTableSuppressProcessor would give (same records, order, record
// context and drops). Its buffer store keeps only what the window store cannot give back
// after a restart or on another agent:
//   - per partition, the end up to which every window has had its final result (or was
//     dropped as closed), under finalMarkerKey: with the window store, it tells which
//     windows are still open, and its changelog carries it to a standby;
//   - the windows the window store will no longer show (their start fell behind its
//     retention while the watermark lagged), and the windows whose latest update carried
//     headers: Kafka Streams' buffer entries, in its layout.
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
// its store, the buffer is unbounded (a bounded one counts its entries' bytes), and the
// window store has a changelog if the buffer has one (a standby restores the open windows
// from it).
func (t *KTable) finalsSource(s Suppressed) (windowFinals, bool) {
	if !s.UntilWindowCloses || s.Buffer.MaxRecords != 0 || s.Buffer.MaxBytes != 0 || t.node.factory == nil {
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
}

// finalPart is one task partition's open windows.
type finalPart struct {
	buf *KeyValueStore // the partition of the buffer store
	// emitted: every window ending at or before it has had its final result.
	emitted int64
	// savedEmitted is what the marker in the buffer store says.
	savedEmitted int64
	// maxStart is the window store's stream time as the updates show it.
	maxStart int64
	ends     []int64 // ascending, each with windows in byEnd
	byEnd    map[int64]map[string]*openWindow
	// spilledTo: every window ending at or before it that the window store may no longer
	// show is in the buffer store.
	spilledTo int64
}

// openWindow is a window's latest update, and whether the buffer store holds it too.
type openWindow struct {
	rec     Record
	spilled bool
}

type dueFinal struct {
	end       int64
	key       string // the serialised windowed key
	partition int32
	w         *openWindow
}

func (p *finalSuppress) Init(ctx *Context) error {
	p.ctx = ctx
	p.time = suppressTime(ctx, Suppressed{UntilWindowCloses: true}, p.grace)
	ctx.onWatermark(p.emitClosed)
	ctx.topology.onCommit(p.saveMarkers)
	// The open windows of a partition are found in the window store before the
	// aggregation first writes to it, so that a window it has just created is not taken
	// for one closed before the restart.
	for _, rn := range ctx.topology.nodes {
		if wa, ok := rn.proc.(*windowAggregate); ok && wa.store == p.src.store && slices.Contains(rn.children, ctx.node) {
			// Another suppression of the same table may have hooked in already.
			prev := wa.beforeUpdate
			wa.beforeUpdate = func(partition int32) error {
				if prev != nil {
					if err := prev(partition); err != nil {
						return err
					}
				}
				_, err := p.partition(partition)
				return err
			}
			return nil
		}
	}
	return fmt.Errorf("suppress: the windowed aggregation of store %s is not its parent", p.src.store)
}

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
	buf := part.buf
	part.maxStart = max(part.maxStart, w.Start)
	if p.time.closedByWatermark(w.End) || w.End <= part.emitted {
		// The final result is out (or the window closed empty): it is never revised.
		p.ctx.Drop(DropWindowClosed)
		return p.spill(buf, part)
	}
	kb, err := buf.key(rec.Key)
	if err != nil {
		return err
	}
	group := part.group(w.End)
	ow := group[string(kb)]
	if ow == nil {
		ow = &openWindow{}
		group[string(kb)] = ow
	}
	ow.rec = rec
	if ow.spilled || len(rec.Headers) > 0 {
		if err := p.writeEntry(buf, kb, ow); err != nil {
			return err
		}
	}
	return p.spill(buf, part)
}

// spill copies into the buffer store the open windows the window store no longer shows.
func (p *finalSuppress) spill(buf *KeyValueStore, part *finalPart) error {
	cutoff := memRetentionCutoff(part.maxStart, p.src.retention)
	for _, end := range part.ends {
		if end <= part.spilledTo {
			continue
		}
		if end-p.src.size >= cutoff {
			return nil
		}
		for k, ow := range part.byEnd[end] {
			if !ow.spilled {
				if err := p.writeEntry(buf, []byte(k), ow); err != nil {
					return err
				}
			}
		}
		part.spilledTo = end
	}
	return nil
}

// writeEntry keeps a window's latest update in the buffer store, as suppress would.
func (p *finalSuppress) writeEntry(buf *KeyValueStore, kb []byte, ow *openWindow) error {
	r := ow.rec
	c, _ := r.Value.(Change)
	e := bufferedChange{Timestamp: r.Timestamp, Offset: r.Offset, Topic: r.Topic, Partition: r.Partition,
		Headers: r.Headers, BufferTime: r.Key.(Windowed).End}
	var err error
	if e.New, err = bufferValueBytes(p.valueSerde, buf, c.New); err != nil {
		return err
	}
	if e.Old, err = bufferValueBytes(p.valueSerde, buf, c.Old); err != nil {
		return err
	}
	e.Prior = e.Old
	ow.spilled = true
	return buf.bytes.Put(kb, e.encode(), r.Timestamp, nil)
}

func (part *finalPart) saveEmitted(end int64) error {
	part.savedEmitted = end
	return part.buf.bytes.Put(finalMarkerKey, binary.BigEndian.AppendUint64(nil, uint64(end)), -1, nil)
}

// emitClosed forwards every open window the watermark has closed (end + grace ≤
// watermark), in the order of suppress's buffers: by window end, then serialised key, then
// partition.
func (p *finalSuppress) emitClosed(wm int64) error {
	// Every task's, not only those that saw a record since the start: after a restart,
	// the stored windows of a partition that has not delivered yet close too.
	if len(p.parts) < int(max(p.ctx.maxSourcePartitions(), 1)) {
		err := p.ctx.forEachTask(func(partition int32) error {
			_, err := p.partition(partition)
			return err
		})
		if err != nil {
			return err
		}
	}
	upper := p.time.lastClosed(wm)
	due := p.due[:0]
	for partition, part := range p.parts {
		n := 0
		for _, end := range part.ends {
			if end > upper {
				break
			}
			for k, ow := range part.byEnd[end] {
				due = append(due, dueFinal{end: end, key: k, partition: partition, w: ow})
			}
			delete(part.byEnd, end)
			n++
		}
		part.ends = part.ends[n:]
		part.emitted = max(part.emitted, upper)
	}
	slices.SortFunc(due, func(a, b dueFinal) int {
		switch {
		case a.end != b.end:
			return cmp.Compare(a.end, b.end)
		case a.key != b.key:
			return strings.Compare(a.key, b.key)
		}
		return int(a.partition - b.partition)
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

// saveMarkers writes, at the commit barrier, each partition's emitted-up-to end that
// moved: with the epoch's final results, and, after a restart, before the watermark is
// known again, it still says which windows closed, the stored ones that closed without a
// final result (dropped updates) included.
func (p *finalSuppress) saveMarkers() error {
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

// emit forwards one final result, as suppress does from its buffer: key and value as the
// buffer store's serdes give them back, with the latest update's record context.
func (p *finalSuppress) emit(d dueFinal) error {
	buf := p.parts[d.partition].buf
	kb := []byte(d.key)
	if d.w.spilled {
		if err := buf.bytes.Put(kb, nil, d.w.rec.Timestamp, nil); err != nil {
			return err
		}
	}
	r := d.w.rec
	c, _ := r.Value.(Change)
	if c.New == nil {
		return nil
	}
	key, err := buf.keyOf(kb)
	if err != nil {
		return err
	}
	vb, err := bufferValueBytes(p.valueSerde, buf, c.New)
	if err != nil {
		return err
	}
	v, err := bufferValue(p.valueSerde, buf, vb)
	if err != nil {
		return err
	}
	return p.ctx.Forward(Record{Key: key, Value: Change{New: v}, Timestamp: r.Timestamp, Headers: r.Headers,
		Topic: r.Topic, Partition: d.partition, Offset: r.Offset})
}

// partition opens a partition of the buffer store and, the first time, finds its open
// windows: after a restart, the window store's windows ending after the marker, and the
// buffer's entries. A buffer without a marker is suppress's own (state from before
// issue 16, or a new store): its entries are the open windows, the window store's others
// are closed.
func (p *finalSuppress) partition(partition int32) (*finalPart, error) {
	if part, ok := p.parts[partition]; ok {
		return part, nil
	}
	buf, err := p.ctx.store(p.store, partition)
	if err != nil {
		return nil, err
	}
	part := &finalPart{buf: buf, emitted: math.MinInt64, savedEmitted: math.MinInt64, maxStart: math.MinInt64,
		spilledTo: math.MinInt64, byEnd: map[int64]map[string]*openWindow{}}
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
	buffered := map[string]bool{}
	it := buf.bytes.Range(nil, nil, false)
	for it.Next() {
		if string(it.Key()) == string(finalMarkerKey) {
			continue
		}
		e, err := decodeBufferedChange(it.Value())
		if err != nil {
			it.Close()
			return nil, fmt.Errorf("store %s partition %d: %w", p.store, partition, err)
		}
		rec, err := p.bufferedRecord(buf, it.Key(), e, partition)
		if err != nil {
			it.Close()
			return nil, err
		}
		part.group(e.BufferTime)[string(it.Key())] = &openWindow{rec: rec, spilled: true}
		buffered[string(it.Key())] = true
	}
	err = it.Err()
	it.Close()
	if err != nil {
		return nil, err
	}
	if err := p.loadWindows(buf, part, partition, buffered, found); err != nil {
		return nil, err
	}
	if !found {
		if err := part.saveEmitted(part.emitted); err != nil {
			return nil, err
		}
	}
	p.parts[partition] = part
	return part, nil
}

// loadWindows adds the window store's open windows (fused state), or, for suppress's own
// state, sets the marker past its closed ones.
func (p *finalSuppress) loadWindows(buf *KeyValueStore, part *finalPart, partition int32, buffered map[string]bool, fused bool) error {
	ws, err := p.ctx.windowStore(p.src.store, partition)
	if err != nil {
		return err
	}
	from := int64(math.MinInt64)
	if fused && part.emitted > math.MinInt64+p.src.size {
		from = part.emitted - p.src.size + 1
	}
	it := ws.FetchAll(from, math.MaxInt64, false)
	defer it.Close()
	for it.Next() {
		w := it.Window()
		part.maxStart = max(part.maxStart, w.Start)
		wk := Windowed{Key: w.Key, Start: w.Start, End: w.End}
		kb, err := buf.key(wk)
		if err != nil {
			return err
		}
		switch {
		case buffered[string(kb)]:
		case fused:
			part.group(w.End)[string(kb)] = &openWindow{rec: Record{Key: wk, Value: Change{New: w.Value},
				Timestamp: w.Timestamp, Partition: partition, Offset: -1}}
		default:
			part.emitted = max(part.emitted, w.End)
		}
	}
	return it.Err()
}

// bufferedRecord is the update a buffer entry holds.
func (p *finalSuppress) bufferedRecord(buf *KeyValueStore, kb []byte, e bufferedChange, partition int32) (Record, error) {
	key, err := buf.keyOf(kb)
	if err != nil {
		return Record{}, err
	}
	var c Change
	if c.New, err = bufferValue(p.valueSerde, buf, e.New); err != nil {
		return Record{}, err
	}
	if c.Old, err = bufferValue(p.valueSerde, buf, e.Old); err != nil {
		return Record{}, err
	}
	return Record{Key: key, Value: c, Timestamp: e.Timestamp, Headers: e.Headers, Topic: e.Topic,
		Partition: partition, Offset: e.Offset}, nil
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

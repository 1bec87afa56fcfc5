package pipeline

import (
	"fmt"
	"math"
)

// Suppressed configures KTable#suppress: either final results of a windowed table
// (untilWindowCloses) or a rate limit per key (untilTimeLimit).
type Suppressed struct {
	// UntilWindowCloses emits each window's final result once, when the global watermark
	// passes its end + the upstream grace (DESIGN.md §5).
	UntilWindowCloses bool
	// TimeLimit (untilTimeLimit, ms) is how long a key's updates wait, on the operator's
	// stream time, before its latest value is forwarded.
	TimeLimit int64
	Buffer    BufferConfig
	// Name names the processor; its store is Name + "-store".
	Name string
}

// BufferConfig bounds a suppression buffer (Suppressed.BufferConfig). A zero limit means
// none.
type BufferConfig struct {
	MaxRecords int64
	MaxBytes   int64
	// EmitEarlyWhenFull forwards the oldest entries when the buffer is over a limit;
	// otherwise a full buffer stops the application (shutDownWhenFull).
	EmitEarlyWhenFull bool
	LoggingDisabled   bool
	// TopicConfig are the buffer changelog's topic settings (withLoggingEnabled(Map)).
	TopicConfig map[string]string
}

func (c BufferConfig) limits() (records, bytes int64) {
	records, bytes = c.MaxRecords, c.MaxBytes
	if records == 0 {
		records = math.MaxInt64
	}
	if bytes == 0 {
		bytes = math.MaxInt64
	}
	return records, bytes
}

func (s Suppressed) validate() error {
	switch {
	case s.Buffer.MaxRecords < 0:
		return fmt.Errorf("suppress: maxRecords must not be negative, not %d", s.Buffer.MaxRecords)
	case s.Buffer.MaxBytes < 0:
		return fmt.Errorf("suppress: maxBytes must not be negative, not %d", s.Buffer.MaxBytes)
	case s.UntilWindowCloses && s.Buffer.EmitEarlyWhenFull:
		// Java's types enforce this: untilWindowCloses takes a StrictBufferConfig only.
		return fmt.Errorf("suppress: untilWindowCloses needs a strict buffer (unbounded(), or a limit with shutDownWhenFull()), not emitEarlyWhenFull(): a final result cannot be emitted early")
	case !s.UntilWindowCloses && s.TimeLimit < 0:
		return fmt.Errorf("suppress: the time limit must not be negative, not %d ms", s.TimeLimit)
	}
	return nil
}

// Suppress holds back the table's updates (KTable#suppress). Names follow Kafka Streams:
// processor KTABLE-SUPPRESS-%010d, then its store KTABLE-SUPPRESS-STATE-STORE-%010d; with a
// name n, processor n and store n-store, and no index used.
func (t *KTable) Suppress(s Suppressed) (*KTable, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	if t.versioned {
		return nil, topologyError("suppress() is only supported for non-versioned KTables (note that version semantics might be inherited from upstream)")
	}
	var grace int64
	if s.UntilWindowCloses {
		g, err := windowCloseGrace(t.node)
		if err != nil {
			return nil, err
		}
		grace = g
	}
	procName, storeName := s.Name, s.Name+"-store"
	if s.Name == "" {
		procName = t.b.newName("KTABLE-SUPPRESS-", "")
		storeName = t.b.newName("KTABLE-SUPPRESS-STATE-STORE-", "")
	}
	if _, dup := t.b.stores[storeName]; dup {
		return nil, fmt.Errorf("suppress: store %q is already declared", storeName)
	}
	n, err := t.b.addNode(&Node{Name: procName, Kind: ProcessorNode, Stores: []string{storeName}})
	if err != nil {
		return nil, err
	}
	serdes := t.b.orDefaults(t.serdes)
	t.b.stores[storeName] = &StoreSpec{Name: storeName, Type: KeyValueStoreType, Serdes: serdes, Logged: !s.Buffer.LoggingDisabled,
		TopicConfig: s.Buffer.TopicConfig, ChangelogVersion: suppressBufferVersion}
	// The buffer keeps each key's value from before its first buffered update, as Kafka
	// Streams' suppress does, so it asks its parents for old values.
	t.enableSendingOldValues()
	out := t.derive(n, t.serdes)
	cfg := s
	ov := out.oldValues
	finals, fusable := t.finalsSource(s)
	n.factory = func() Processor {
		if fusable && !*ov {
			return &finalSuppress{src: finals, grace: grace, store: storeName, valueSerde: serdes.Value,
				parts: map[int32]*finalPart{}}
		}
		return &suppressProc{cfg: cfg, grace: grace, store: storeName, valueSerde: serdes.Value, oldValues: ov,
			parts: map[int32]*bufferIndex{}}
	}
	t.node.addChild(n)
	return out, nil
}

// windowCloseGrace finds the grace period of the windowed aggregation a table derives from,
// walking up the graph as Kafka Streams' GraphGraceSearchUtil does (several windowed
// parents: the largest grace).
func windowCloseGrace(n *Node) (int64, error) {
	return graceSearch(n, "", map[*Node]bool{})
}

func graceSearch(n *Node, chain string, visited map[*Node]bool) (int64, error) {
	if n.factory != nil {
		switch wa := n.factory().(type) {
		case *windowAggregate:
			return wa.windows.Grace, nil
		case *sessionAggregate:
			return wa.windows.Grace + wa.windows.Gap, nil // GraphGraceSearchUtil: sessions add the gap
		case *slidingAggregate:
			return wa.windows.Grace, nil
		}
	}
	if chain == "" {
		chain = n.Name
	} else {
		chain = n.Name + "->" + chain
	}
	if len(n.Parents) == 0 {
		// Kafka Streams' graph hangs every source from a node named root.
		return 0, noGraceError("root->" + chain)
	}
	grace := int64(-1)
	for _, p := range n.Parents {
		if visited[p] {
			continue
		}
		visited[p] = true
		g, err := graceSearch(p, chain, visited)
		if err != nil {
			return 0, err
		}
		grace = max(grace, g)
	}
	if grace < 0 {
		return 0, noGraceError(chain)
	}
	return grace, nil
}

func noGraceError(chain string) error {
	return topologyError("Window close time is only defined for windowed computations. Got [%s].", chain)
}

// suppressProc is KTableSuppressProcessor. The buffer store holds each key's latest update;
// an in-memory index (loaded from the store on first use of a partition) orders the keys
// by buffer time.
type suppressProc struct {
	ctx        *Context
	cfg        Suppressed
	grace      int64
	store      string
	valueSerde Serde
	oldValues  *bool
	time       windowTime
	parts      map[int32]*bufferIndex
}

func (p *suppressProc) Init(ctx *Context) error {
	p.ctx = ctx
	p.time = suppressTime(ctx, p.cfg, p.grace)
	if p.cfg.UntilWindowCloses && !p.time.taskTime {
		ctx.onWatermark(p.emitClosed)
	}
	return nil
}

func (p *suppressProc) Process(rec Record) error {
	if rec.Key == nil {
		p.ctx.Drop(DropNullKey)
		return nil
	}
	c, _ := rec.Value.(Change)
	bufferTime := rec.Timestamp
	if p.cfg.UntilWindowCloses {
		w, ok := rec.Key.(Windowed)
		if !ok {
			return fmt.Errorf("suppress untilWindowCloses: the key %v is not windowed", rec.Key)
		}
		if p.time.closedByWatermark(w.End) {
			// The final result is out (or the window closed empty): it is never revised.
			p.ctx.Drop(DropWindowClosed)
			return nil
		}
		bufferTime = w.End
	}
	store, idx, err := p.partition(rec.Partition)
	if err != nil {
		return err
	}
	kb, err := store.key(rec.Key)
	if err != nil {
		return err
	}
	e := bufferedChange{Timestamp: rec.Timestamp, Offset: rec.Offset, Topic: rec.Topic, Partition: rec.Partition,
		Headers: rec.Headers, BufferTime: bufferTime}
	if e.Old, err = p.serialize(store, c.Old); err != nil {
		return err
	}
	if e.New, err = p.serialize(store, c.New); err != nil {
		return err
	}
	e.Prior = e.Old
	if slot, found := idx.entries[string(kb)]; found {
		// A newer update keeps the first buffer position and the value from before it.
		vb, _, ok, err := store.bytes.Get(kb)
		if err != nil {
			return err
		}
		if ok {
			prev, err := decodeBufferedChange(vb)
			if err != nil {
				return fmt.Errorf("store %s: %w", p.store, err)
			}
			e.Prior = prev.Prior
		}
		e.BufferTime = slot.time
	}
	vb := e.encode()
	if err := store.bytes.Put(kb, vb, rec.Timestamp, nil); err != nil {
		return err
	}
	idx.put(string(kb), e.BufferTime, int64(len(kb)+len(vb)))
	if !p.cfg.UntilWindowCloses || p.time.taskTime {
		// Kafka Streams' rule, also for final results in task time: what is due on the
		// operator's stream time goes out, the buffer time being the window end then.
		st := p.time.observe(rec.Partition, rec.Timestamp)
		if err := p.evictWhile(rec.Partition, func(ref bufferRef) bool { return p.time.closedAt(ref.time, st) }); err != nil {
			return err
		}
	}
	return p.enforceCapacity(rec.Partition, idx)
}

func (p *suppressProc) serialize(store *KeyValueStore, v any) ([]byte, error) {
	return bufferValueBytes(p.valueSerde, store, v)
}

// enforceCapacity emits the oldest entries early, or fails, while the buffer is over a limit.
func (p *suppressProc) enforceCapacity(partition int32, idx *bufferIndex) error {
	maxRecords, maxBytes := p.cfg.Buffer.limits()
	over := func(bufferRef) bool { return int64(len(idx.order)) > maxRecords || idx.bytes > maxBytes }
	if !over(bufferRef{}) {
		return nil
	}
	if !p.cfg.Buffer.EmitEarlyWhenFull {
		// KTableSuppressProcessor.enforceConstraints's words.
		return kafkaMessage(fmt.Sprintf("%s buffer exceeded its max capacity. Currently [%d/%d] records and [%d/%d] bytes.",
			p.ctx.Name(), len(idx.order), maxRecords, idx.bytes, maxBytes))
	}
	return p.evictWhile(partition, over)
}

// evictWhile forwards and removes, oldest first, the entries of a partition while due holds.
func (p *suppressProc) evictWhile(partition int32, due func(bufferRef) bool) error {
	store, idx, err := p.partition(partition)
	if err != nil {
		return err
	}
	for len(idx.order) > 0 && due(idx.order[0]) {
		if err := p.emit(store, idx, partition); err != nil {
			return err
		}
	}
	return nil
}

// emitClosed forwards, in buffer-time (window end) order across partitions, every buffered
// window that the watermark has closed: end + grace ≤ watermark.
func (p *suppressProc) emitClosed(wm int64) error {
	err := p.ctx.forEachSeenTask(func(partition int32) error {
		_, _, err := p.partition(partition)
		return err
	})
	if err != nil {
		return err
	}
	for {
		best := int32(-1)
		for partition, idx := range p.parts {
			if len(idx.order) == 0 || !p.time.closedAt(idx.order[0].time, wm) {
				continue
			}
			if best < 0 || idx.order[0].less(p.parts[best].order[0]) ||
				(idx.order[0] == p.parts[best].order[0] && partition < best) {
				best = partition
			}
		}
		if best < 0 {
			return nil
		}
		store, idx, err := p.partition(best)
		if err != nil {
			return err
		}
		if err := p.emit(store, idx, best); err != nil {
			return err
		}
	}
}

// emit forwards the oldest entry of a partition with its own record context and removes it.
// Final results drop tombstones.
func (p *suppressProc) emit(store *KeyValueStore, idx *bufferIndex, partition int32) error {
	ref := idx.order[0]
	kb := []byte(ref.key)
	vb, _, found, err := store.bytes.Get(kb)
	if err != nil {
		return err
	}
	idx.remove()
	if !found {
		return nil
	}
	e, err := decodeBufferedChange(vb)
	if err != nil {
		return fmt.Errorf("store %s: %w", p.store, err)
	}
	if err := store.bytes.Put(kb, nil, e.Timestamp, nil); err != nil {
		return err
	}
	if e.New == nil && p.cfg.UntilWindowCloses {
		return nil
	}
	key, err := store.keyOf(kb)
	if err != nil {
		return err
	}
	var c Change
	if c.New, err = p.deserialize(store, e.New); err != nil {
		return err
	}
	if *p.oldValues {
		if c.Old, err = p.deserialize(store, e.Old); err != nil {
			return err
		}
	}
	return p.ctx.Forward(Record{Key: key, Value: c, Timestamp: e.Timestamp, Headers: e.Headers,
		Topic: e.Topic, Partition: partition, Offset: e.Offset})
}

func (p *suppressProc) deserialize(store *KeyValueStore, b []byte) (any, error) {
	return bufferValue(p.valueSerde, store, b)
}

// partition opens a partition of the buffer store and, the first time, indexes what it
// holds (after a restart: the entries not emitted before it).
func (p *suppressProc) partition(partition int32) (*KeyValueStore, *bufferIndex, error) {
	store, err := p.ctx.store(p.store, partition)
	if err != nil {
		return nil, nil, err
	}
	if idx, ok := p.parts[partition]; ok {
		return store, idx, nil
	}
	idx := &bufferIndex{entries: map[string]bufferSlot{}}
	it := store.bytes.Range(nil, nil, false)
	for it.Next() {
		if string(it.Key()) == string(finalMarkerKey) {
			// Its open windows are in the window store, which this suppression does not read.
			it.Close()
			return nil, nil, fmt.Errorf("store %s partition %d holds final results kept with their window store (written while nothing downstream asked for old values and the buffer was unbounded); not supported yet: taking such a store over into a buffer of its own", p.store, partition)
		}
		e, err := decodeBufferedChange(it.Value())
		if err != nil {
			it.Close()
			return nil, nil, fmt.Errorf("store %s partition %d: %w", p.store, partition, err)
		}
		idx.put(string(it.Key()), e.BufferTime, int64(len(it.Key())+len(it.Value())))
	}
	err = it.Err()
	it.Close()
	if err != nil {
		return nil, nil, err
	}
	p.parts[partition] = idx
	return store, idx, nil
}

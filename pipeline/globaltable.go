package pipeline

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// GlobalKTable is the builder-side handle of a global table (Kafka Streams' GlobalKTable):
// a store holding every partition of its topic, usable only as the right side of a
// stream join. It has no changelog: its topic is its changelog.
type GlobalKTable struct {
	b     *StreamsBuilder
	topic string
	store string
}

// StoreName is the global store's name (queryableStoreName).
func (g *GlobalKTable) StoreName() string { return g.store }

// GlobalTable reads a topic into a global store (StreamsBuilder#globalTable). As in Kafka
// Streams the store takes its index first (<topic>-STATE-STORE-%010d unless named), then
// the source node, then the KTABLE-SOURCE processor that writes the store. The topic is not
// read by the application's consumer group: the agent reads all of it (GlobalFetcher).
func (b *StreamsBuilder) GlobalTable(topic string, c Consumed, m Materialized) (*GlobalKTable, error) {
	if topic == "" {
		return nil, fmt.Errorf("globalTable: empty topic name")
	}
	if _, dup := b.sourceTopics[topic]; dup {
		return nil, fmt.Errorf("globalTable: topic %q is already a source of this topology (Kafka Streams allows one source per topic)", topic)
	}
	if m.Versioned {
		return nil, fmt.Errorf("globalTable: a global table cannot be versioned, as in Kafka Streams (KAFKA-14834): it is read whole at the start, and a stream-global join has no temporal semantics")
	}
	for _, g := range b.globalSources() {
		if g.Topics[0] == topic {
			return nil, fmt.Errorf("globalTable: topic %q is already read by another global table", topic)
		}
	}
	storeName := m.StoreName
	if storeName == "" {
		storeName = b.newName(topic+"-STATE-STORE-", "")
	}
	if _, dup := b.stores[storeName]; dup {
		return nil, fmt.Errorf("globalTable: store %q is already declared", storeName)
	}
	serdes := b.orDefaults(c.Serdes)
	src, err := b.addNode(&Node{
		Name:   b.newName("KSTREAM-SOURCE-", c.Name),
		Kind:   SourceNode,
		Topics: []string{topic},
		source: &sourceSpec{serdes: serdes, extractor: c.TimestampExtractor},
	})
	if err != nil {
		return nil, err
	}
	n, err := b.addNode(&Node{Name: b.newName("KTABLE-SOURCE-", ""), Kind: ProcessorNode, Stores: []string{storeName},
		factory: func() Processor { return &globalTableSource{store: storeName} }})
	if err != nil {
		return nil, err
	}
	src.addChild(n)
	storeSerdes := serdes
	if m.Serdes.Key != nil {
		storeSerdes.Key = m.Serdes.Key
	}
	if m.Serdes.Value != nil {
		storeSerdes.Value = m.Serdes.Value
	}
	b.stores[storeName] = &StoreSpec{Name: storeName, Type: TimestampedKeyValueStoreType, Serdes: storeSerdes}
	return &GlobalKTable{b: b, topic: topic, store: storeName}, nil
}

// globalSources are the source nodes of global tables: the topic sources (they have a
// source spec, unlike repartition sources) whose topic the consumer group does not read.
func (b *StreamsBuilder) globalSources() []*Node {
	var out []*Node
	for _, n := range b.nodes {
		if n.Kind == SourceNode && n.source != nil && !n.Internal && len(n.Topics) == 1 &&
			b.sourceTopics[n.Topics[0]] != n && len(n.Children) == 1 && len(n.Children[0].Stores) == 1 {
			out = append(out, n)
		}
	}
	return out
}

// GlobalStoreTopic is one global store and the topic it replicates.
type GlobalStoreTopic struct {
	Topic string
	Store string
}

// GlobalStores lists the global stores, in declaration order.
func (b *StreamsBuilder) GlobalStores() []GlobalStoreTopic {
	var out []GlobalStoreTopic
	for _, n := range b.globalSources() {
		out = append(out, GlobalStoreTopic{Topic: n.Topics[0], Store: n.Children[0].Stores[0]})
	}
	return out
}

// IsGlobalStore reports whether a store is a global table's store (one partition, 0).
func (b *StreamsBuilder) IsGlobalStore(name string) bool {
	for _, g := range b.GlobalStores() {
		if g.Store == name {
			return true
		}
	}
	return false
}

// globalTableSource writes a global topic's records into the global store's only partition:
// null keys are dropped (counted), null values delete. Nothing is forwarded.
type globalTableSource struct {
	ctx   *Context
	store string
}

func (p *globalTableSource) Init(ctx *Context) error { p.ctx = ctx; return nil }

func (p *globalTableSource) Process(rec Record) error {
	if rec.Key == nil {
		p.ctx.Drop(DropNullKey)
		return nil
	}
	s, err := p.ctx.store(p.store, 0)
	if err != nil {
		return err
	}
	return s.PutWithHeaders(rec.Key, rec.Value, rec.Timestamp, rec.Headers)
}

// globalOffsetKey is the store metadata key holding the next offset to read of one
// partition of the global topic; it is committed with the store's writes.
func globalOffsetKey(partition int32) string {
	return "global.next.offset." + strconv.Itoa(int(partition))
}

// GlobalNextOffset is the next offset of a global topic partition that the global store
// has not applied yet (0 when it has applied none).
func (t *Topology) GlobalNextOffset(topic string, partition int32) (int64, error) {
	_, _, store, err := t.globalSource(topic)
	if err != nil {
		return 0, err
	}
	if _, err := t.Store(store, 0); err != nil {
		return 0, err
	}
	v, err := t.storeProvider.Meta(store, 0, globalOffsetKey(partition))
	if err != nil || v == nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("global store %s: offset metadata of partition %d is %x", store, partition, v)
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// globalSource is the global task's source of a global table's topic, and its store.
func (t *Topology) globalSource(topic string) (*Task, *runtimeNode, string, error) {
	k := t.tasks[globalTaskID]
	if k != nil {
		src, ok := k.sources[topic]
		if ok && len(src.children) == 1 {
			if g, ok := src.children[0].proc.(globalWriter); ok && g.globalStore() != "" {
				return k, src, g.globalStore(), nil
			}
		}
	}
	return nil, nil, "", fmt.Errorf("topic %q is not the topic of a global table this topology keeps", topic)
}

// ProcessGlobal applies one record of a global table's topic to its store and records the
// partition's next offset with it. Unlike Process it leaves stream time and the watermark
// alone: global records are not part of any task.
func (t *Topology) ProcessGlobal(in SourceRecord) error {
	_, src, store, err := t.globalSource(in.Topic)
	if err != nil {
		return err
	}
	rec, keep, err := src.proc.(*sourceProc).decode(src.ctx, in)
	if err == nil && keep {
		err = src.process(rec)
	}
	if err == nil {
		next := binary.BigEndian.AppendUint64(nil, uint64(in.Offset+1))
		err = t.storeProvider.PutMeta(store, 0, globalOffsetKey(in.Partition), next)
	}
	if err != nil {
		return &RecordError{Topic: in.Topic, Partition: in.Partition, Offset: in.Offset, Err: err}
	}
	return nil
}

// GlobalFetcher reads what is new in a global topic: for every partition, from next(p) to
// the end the topic has now, passing each record to apply in offset order.
type GlobalFetcher func(topic string, next func(partition int32) (int64, error), apply func(SourceRecord) error) error

// UpdateGlobalStores brings every global store up to the current end of its topic.
func (t *Topology) UpdateGlobalStores(fetch GlobalFetcher) error {
	k := t.tasks[globalTaskID]
	if k == nil {
		return nil
	}
	for topic, src := range k.sources {
		if _, ok := src.proc.(*sourceProc); !ok || len(src.children) != 1 {
			continue
		}
		if g, ok := src.children[0].proc.(globalWriter); !ok || g.globalStore() == "" {
			continue
		}
		next := func(p int32) (int64, error) { return t.GlobalNextOffset(topic, p) }
		if err := fetch(topic, next, t.ProcessGlobal); err != nil {
			return fmt.Errorf("update the global store of %s: %w", topic, err)
		}
	}
	return nil
}

// ScheduleGlobalUpdates keeps the global stores current while the application runs: a
// wall-clock punctuator, so on the processing goroutine and inside the epoch, fetches what
// is new every interval ms. The store's writes and its offsets commit together, so an
// aborted epoch is read again from the committed offsets.
func (t *Topology) ScheduleGlobalUpdates(intervalMs int64, fetch GlobalFetcher) error {
	k := t.tasks[globalTaskID]
	if k == nil {
		return nil
	}
	for _, rn := range k.nodes {
		if g, ok := rn.proc.(globalWriter); !ok || g.globalStore() == "" {
			continue
		}
		pc := &ProcessorContext{node: rn, task: k}
		_, err := pc.Schedule(intervalMs, WallClockTime, func(int64) error { return t.UpdateGlobalStores(fetch) })
		return err
	}
	return errors.New("the topology has no global table")
}

// ValueJoinerWithMappedKey joins a stream record with a global table value (nil when absent
// in a left join); it also gets the mapped key (ValueJoinerWithStreamAndMappedKey, KIP-1340).
type ValueJoinerWithMappedKey func(rec Record, mappedKey, tableValue any) (any, error)

// JoinGlobal joins each stream record with the global table's value for the key that mapper
// returns (the table key) (KStream#join(GlobalKTable, KeyValueMapper, joiner)).
func (s *KStream) JoinGlobal(g *GlobalKTable, mapper ValueMapper, joiner ValueJoinerWithMappedKey, name string) (*KStream, error) {
	return s.joinGlobal(g, mapper, joiner, false, name)
}

// LeftJoinGlobal is JoinGlobal that also emits records without a table value, or whose
// mapper returned nil (KAFKA-19208), with a nil table value.
func (s *KStream) LeftJoinGlobal(g *GlobalKTable, mapper ValueMapper, joiner ValueJoinerWithMappedKey, name string) (*KStream, error) {
	return s.joinGlobal(g, mapper, joiner, true, name)
}

func (s *KStream) joinGlobal(g *GlobalKTable, mapper ValueMapper, joiner ValueJoinerWithMappedKey, left bool, name string) (*KStream, error) {
	if g == nil || g.b != s.b {
		return nil, fmt.Errorf("join: the global table must come from the same builder")
	}
	if mapper == nil || joiner == nil {
		return nil, fmt.Errorf("join with a global table needs a key mapper and a joiner")
	}
	store := g.store
	// Like Kafka Streams, the join node does not list the global store: every processor
	// may read global stores.
	// Kafka Streams 4.4 names every GlobalKTable join, inner ones too, KSTREAM-LEFTJOIN-
	// (KStreamImpl#doGlobalTableJoinWithStreamAndMappedKey, which every joiner form goes
	// through since KIP-1340), and describe() shows that.
	n, err := s.processor("KSTREAM-LEFTJOIN-", name, func() Processor {
		return &streamGlobalJoin{store: store, mapper: mapper, joiner: joiner, left: left}
	})
	if err != nil {
		return nil, err
	}
	n.ReadsGlobal = []string{store}
	return s.derive(n, Serdes{Key: s.serdes.Key}, s.keyChanged), nil
}

// streamGlobalJoin is KStreamKTableJoinProcessor with a key mapper, Kafka Streams 4.1+
// rules: a nil value is dropped (counted); a nil mapped key is dropped (counted) by an
// inner join and joined with a nil table value by a left join; a nil stream key joins.
type streamGlobalJoin struct {
	ctx    *Context
	store  string
	mapper ValueMapper
	joiner ValueJoinerWithMappedKey
	left   bool
}

func (p *streamGlobalJoin) Init(ctx *Context) error { p.ctx = ctx; return nil }

func (p *streamGlobalJoin) Process(rec Record) error {
	if rec.Value == nil {
		p.ctx.Drop(DropNullValue)
		return nil
	}
	mapped, err := p.mapper(rec)
	if err != nil {
		return fmt.Errorf("key mapper: %w", err)
	}
	var tableValue any
	if mapped == nil {
		if !p.left {
			p.ctx.Drop(DropNullKey)
			return nil
		}
	} else {
		store, err := p.ctx.store(p.store, 0)
		if err != nil {
			return err
		}
		v, _, found, err := store.Get(mapped)
		if err != nil {
			return err
		}
		if found {
			tableValue = v
		}
	}
	if tableValue == nil && !p.left {
		return nil
	}
	out, err := p.joiner(rec, mapped, tableValue)
	if err != nil {
		return err
	}
	rec.Value = out
	return p.ctx.Forward(rec)
}

package pipeline

import (
	"fmt"
	"log/slog"
)

// Change is the value that flows on KTable edges: a key's new value and, when a downstream
// operator asked for it, its old value (Kafka Streams' Change). nil means absent/deleted.
type Change struct {
	New any
	Old any
	// OutOfOrder marks an update of a versioned table older than the key's latest version
	// (Kafka Streams' !isLatest, KIP-914): it is kept in the store's history, and the
	// operators that compute latest results (table joins, groupBy) skip it.
	OutOfOrder bool
}

// KTable is the builder-side handle of a changelog stream (Kafka Streams' KTable). Its
// records carry Change values.
type KTable struct {
	b      *StreamsBuilder
	node   *Node
	serdes Serdes
	// store is the table's materialized store, "" when not materialized.
	store string
	// oldValues is shared with the processor producing this table: set when a downstream
	// operator needs old values (Kafka Streams' enableSendingOldValues).
	oldValues *bool
	// parent is the table this one derives from (nil for source tables and aggregates).
	parent *KTable
	// materialize turns a lazily materialized source table into a materialized one.
	materialize func()
	// source: the table is a KTableSource (a source table, toTable, a foreign-key join's
	// result), which has old values only from its store.
	source bool
	// derivedGetter reads the rows of a table without a store from the tables it derives
	// from (ktable_getter.go).
	derivedGetter func() (*tableGetter, error)
	// versioned: the table's rows are versioned, its own store's or, through filter and
	// mapValues, its parent's (Kafka Streams' isOutputVersioned, KIP-914).
	versioned bool
}

// Node returns the graph node producing the table.
func (t *KTable) Node() *Node { return t.node }

// StoreName is the name of the table's store, "" when the table is not materialized.
func (t *KTable) StoreName() string { return t.store }

// enableSendingOldValues asks this table and its parents to forward old values.
func (t *KTable) enableSendingOldValues() {
	for x := t; x != nil; x = x.parent {
		*x.oldValues = true
		if x.materialize != nil {
			x.materialize()
		}
	}
}

// enableSendingOldValuesIfMaterialized asks for old values where they come without
// materializing a source table that is not (Kafka Streams' enableSendingOldValues(false),
// which a table filter calls on its parent when it is built): it reports whether they come.
func (t *KTable) enableSendingOldValuesIfMaterialized() bool {
	for x := t; x != nil && !*x.oldValues; x = x.parent {
		if x.source && x.store == "" {
			return false
		}
	}
	t.enableSendingOldValues()
	return true
}

// Table reads a topic as a table (StreamsBuilder#table): a source node, then a
// KTABLE-SOURCE processor with the table's store. The store name takes its index first,
// as in Kafka Streams (<topic>-STATE-STORE-%010d unless named). The table is materialized
// when named (queryable) or when a downstream operator needs old values.
func (b *StreamsBuilder) Table(topic string, c Consumed, m Materialized) (*KTable, error) {
	if topic == "" {
		return nil, fmt.Errorf("table: empty topic name")
	}
	storeName := m.StoreName
	if storeName == "" {
		storeName = b.newName(topic+"-STATE-STORE-", "")
	}
	s, err := b.Stream([]string{topic}, c)
	if err != nil {
		return nil, err
	}
	serdes := s.serdes
	if m.Serdes.Key != nil {
		serdes.Key = m.Serdes.Key
	}
	if m.Serdes.Value != nil {
		serdes.Value = m.Serdes.Value
	}
	oldValues := false
	spec := &tableSourceSpec{}
	n, err := s.processor("KTABLE-SOURCE-", "", func() Processor { return &tableSource{spec: spec, oldValues: &oldValues} })
	if err != nil {
		return nil, err
	}
	n.valueSerde = serdes.Value
	t := &KTable{b: b, node: n, serdes: serdes, oldValues: &oldValues, source: true}
	if err := t.materializeWith(spec, storeName, b.orDefaults(serdes), m); err != nil {
		return nil, err
	}
	return t, nil
}

// materializeWith gives a table source (or toTable) its materialize hook: a store made as m
// says, timestamped or, with m.Versioned, versioned (Materialized.as a versioned store
// supplier, which always materializes it).
func (t *KTable) materializeWith(spec *tableSourceSpec, storeName string, serdes Serdes, m Materialized) error {
	if m.Versioned {
		if m.StoreName == "" {
			return fmt.Errorf("a versioned table needs a store name: materialized = {name=, type = \"versionedKeyValue\", historyRetention=}")
		}
		if m.HistoryRetention < 0 {
			return fmt.Errorf("versioned store %q: history retention %d ms must not be negative", m.StoreName, m.HistoryRetention)
		}
	}
	t.materialize = func() {
		if spec.store != "" {
			return
		}
		spec.store, spec.versioned = storeName, m.Versioned
		t.store, t.versioned = storeName, m.Versioned
		t.node.Stores = []string{storeName}
		st := &StoreSpec{Name: storeName, Type: TimestampedKeyValueStoreType, Serdes: serdes, Logged: !m.LoggingDisabled, TopicConfig: m.TopicConfig, CachingDisabled: m.CachingDisabled}
		if m.Versioned {
			st.Type, st.HistoryRetention, st.CachingDisabled = VersionedKeyValueStoreType, m.HistoryRetention, true
		}
		t.b.stores[storeName] = st
	}
	if m.StoreName != "" {
		if _, dup := t.b.stores[m.StoreName]; dup {
			return fmt.Errorf("store %q is already declared", m.StoreName)
		}
		t.materialize()
	}
	return nil
}

type tableSourceSpec struct {
	store     string
	versioned bool
}

// tableSource turns records into table updates (KTableSource).
type tableSource struct {
	ctx       *Context
	emit      func(Record) error // forward, or through the record cache
	spec      *tableSourceSpec
	oldValues *bool
}

func (p *tableSource) Init(ctx *Context) error {
	p.ctx = ctx
	p.emit = ctx.emitter(p.spec.store)
	return nil
}

func (p *tableSource) Process(rec Record) error {
	if rec.Key == nil {
		p.ctx.Drop(DropNullKey)
		return nil
	}
	if p.spec.store == "" {
		rec.Value = Change{New: rec.Value}
		return p.ctx.Forward(rec)
	}
	if p.spec.versioned {
		return p.processVersioned(rec)
	}
	store, err := p.ctx.store(p.spec.store, rec.Partition)
	if err != nil {
		return err
	}
	old, oldTs, found, err := store.Get(rec.Key)
	if err != nil {
		return err
	}
	if found && rec.Timestamp < oldTs {
		slog.Debug("table update older than the stored value", "store", p.spec.store, "timestamp", rec.Timestamp, "stored", oldTs)
	}
	if err := store.Put(rec.Key, rec.Value, rec.Timestamp); err != nil {
		return err
	}
	c := Change{New: rec.Value}
	if *p.oldValues {
		c.Old = old
	}
	rec.Value = c
	return p.emit(rec)
}

// processVersioned is KTableSource over a versioned store: the old value is the key's
// latest version, a put older than the history retention is dropped (counted as late, as
// the versioned store's expired put), and a put older than the latest version is kept in
// the history and forwarded as out of order. Versioned stores have no record cache.
func (p *tableSource) processVersioned(rec Record) error {
	store, err := p.ctx.versionedStore(p.spec.store, rec.Partition)
	if err != nil {
		return err
	}
	old, _, err := store.Get(rec.Key)
	if err != nil {
		return err
	}
	outOfOrder, kept, err := p.ctx.putVersioned(store, rec, rec.Value)
	if err != nil || !kept {
		return err
	}
	c := Change{New: rec.Value, OutOfOrder: outOfOrder}
	if *p.oldValues {
		c.Old = old.Value
	}
	rec.Value = c
	return p.ctx.Forward(rec)
}

func (t *KTable) derive(n *Node, serdes Serdes) *KTable {
	ov := false
	n.valueSerde = serdes.Value
	return &KTable{b: t.b, node: n, serdes: serdes, oldValues: &ov, parent: t, versioned: t.versioned}
}

func (t *KTable) processor(prefix, name string, factory func(oldValues *bool) Processor) (*KTable, error) {
	ov := false
	n, err := t.b.addNode(&Node{Name: t.b.newName(prefix, name), Kind: ProcessorNode})
	if err != nil {
		return nil, err
	}
	n.factory = func() Processor { return factory(&ov) }
	t.node.addChild(n)
	out := t.derive(n, t.serdes)
	out.oldValues = &ov
	return out, nil
}

// ToStream turns the table's updates into a stream of new values (deletes become nil).
func (t *KTable) ToStream(name string) (*KStream, error) {
	n, err := t.b.addNode(&Node{Name: t.b.newName("KTABLE-TOSTREAM-", name), Kind: ProcessorNode, factory: func() Processor { return &toStreamProc{} }})
	if err != nil {
		return nil, err
	}
	t.node.addChild(n)
	n.valueSerde = t.serdes.Value
	return &KStream{b: t.b, node: n, serdes: t.serdes}, nil
}

type toStreamProc struct{ ctx *Context }

func (p *toStreamProc) Init(ctx *Context) error { p.ctx = ctx; return nil }
func (p *toStreamProc) Process(rec Record) error {
	if c, ok := rec.Value.(Change); ok {
		rec.Value = c.New
	}
	return p.ctx.Forward(rec)
}

// Filter keeps values for which pred holds; others become tombstones (KTable#filter).
// Where its parent has old values without being materialized for it (a materialized source
// table, an aggregation), the filter takes them, as Kafka Streams' KTableFilter does: an
// update that neither was nor is kept, such as the tombstone of a key the table never held,
// is not forwarded.
func (t *KTable) Filter(pred Predicate, not bool, name string) (*KTable, error) {
	versioned := t.versioned
	out, err := t.processor("KTABLE-FILTER-", name, func(ov *bool) Processor {
		return &tableFilter{pred: pred, not: not, oldValues: ov, versioned: versioned}
	})
	if err != nil {
		return nil, err
	}
	if t.enableSendingOldValuesIfMaterialized() {
		*out.oldValues = true
	}
	out.derivedGetter = mappedGetter(t, func(rec Record) (any, error) {
		ok, err := pred(rec)
		if err != nil || ok == not {
			return nil, err
		}
		return rec.Value, nil
	})
	return out, nil
}

type tableFilter struct {
	ctx       *Context
	pred      Predicate
	not       bool
	oldValues *bool
	// versioned: the input is versioned, and every update is forwarded (KIP-914).
	versioned bool
}

func (p *tableFilter) Init(ctx *Context) error { p.ctx = ctx; return nil }

func (p *tableFilter) keep(rec Record, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	r := rec
	r.Value = v
	ok, err := p.pred(r)
	if err != nil || ok == p.not {
		return nil, err
	}
	return v, nil
}

func (p *tableFilter) Process(rec Record) error {
	c, _ := rec.Value.(Change)
	nv, err := p.keep(rec, c.New)
	if err != nil {
		return err
	}
	var ov any
	if *p.oldValues {
		if ov, err = p.keep(rec, c.Old); err != nil {
			return err
		}
		if nv == nil && ov == nil && !p.versioned {
			return nil
		}
	}
	rec.Value = Change{New: nv, Old: ov, OutOfOrder: c.OutOfOrder}
	return p.ctx.Forward(rec)
}

// MapValues maps each non-null value (KTable#mapValues).
func (t *KTable) MapValues(fn ValueMapper, name string) (*KTable, error) {
	out, err := t.processor("KTABLE-MAPVALUES-", name, func(ov *bool) Processor { return &tableMapValues{fn: fn, oldValues: ov} })
	if err != nil {
		return nil, err
	}
	out.serdes = Serdes{Key: t.serdes.Key}
	out.node.valueSerde = nil
	out.derivedGetter = mappedGetter(t, fn)
	return out, nil
}

type tableMapValues struct {
	ctx       *Context
	fn        ValueMapper
	oldValues *bool
}

func (p *tableMapValues) Init(ctx *Context) error { p.ctx = ctx; return nil }

func (p *tableMapValues) apply(rec Record, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	r := rec
	r.Value = v
	return p.fn(r)
}

func (p *tableMapValues) Process(rec Record) error {
	c, _ := rec.Value.(Change)
	nv, err := p.apply(rec, c.New)
	if err != nil {
		return err
	}
	var ov any
	if *p.oldValues {
		if ov, err = p.apply(rec, c.Old); err != nil {
			return err
		}
	}
	rec.Value = Change{New: nv, Old: ov, OutOfOrder: c.OutOfOrder}
	return p.ctx.Forward(rec)
}

// ToTable turns a stream into a table (KStream#toTable): a KSTREAM-TOTABLE processor that
// materializes its store only when named or needed. Names are taken in Kafka Streams'
// order: the processor, the store, then, after a key change, the repartition topic named
// after the processor (<processor>-repartition), with the table's serdes.
func (s *KStream) ToTable(name string, m Materialized) (*KTable, error) {
	procName := s.b.newName("KSTREAM-TOTABLE-", name)
	storeName := m.StoreName
	if storeName == "" {
		storeName = s.b.newName("KSTREAM-TOTABLE-STATE-STORE-", "")
	}
	serdes := s.b.orDefaults(Serdes{Key: orSerde(m.Serdes.Key, s.serdes.Key), Value: orSerde(m.Serdes.Value, s.serdes.Value)})
	parent := s.node
	if s.keyChanged {
		src, err := s.b.addRepartition(s.node, procName, serdes, 0, nil)
		if err != nil {
			return nil, err
		}
		parent = src
	}
	oldValues := false
	spec := &tableSourceSpec{}
	n, err := s.b.addNode(&Node{Name: procName, Kind: ProcessorNode, factory: func() Processor { return &tableSource{spec: spec, oldValues: &oldValues} }})
	if err != nil {
		return nil, err
	}
	parent.addChild(n)
	n.valueSerde = serdes.Value
	t := &KTable{b: s.b, node: n, serdes: serdes, oldValues: &oldValues, source: true}
	if err := t.materializeWith(spec, storeName, serdes, m); err != nil {
		return nil, err
	}
	return t, nil
}

func orSerde(a, b Serde) Serde {
	if a != nil {
		return a
	}
	return b
}

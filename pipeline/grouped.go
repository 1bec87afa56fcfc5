package pipeline

import "fmt"

// Materialized configures the store of a table or aggregation (Kafka Streams' Materialized).
// An empty StoreName lets the builder generate one.
type Materialized struct {
	StoreName       string
	Serdes          Serdes
	LoggingDisabled bool
	TopicConfig     map[string]string // the changelog topic's settings (withLoggingEnabled(Map))
	CachingDisabled bool
	// Given reports that a Materialized was passed at all: count(Materialized) with no name
	// consumes one more name index than count(), as in Kafka Streams.
	Given bool
	// Versioned makes the store a versioned key-value store keeping HistoryRetention ms of
	// history (Materialized.as(Stores.persistentVersionedKeyValueStore(name, retention))).
	Versioned        bool
	HistoryRetention int64
	// With HasRetention, a windowed or session aggregation's store keeps Retention ms
	// (Materialized.withRetention) instead of the windows' default, the least it may keep.
	HasRetention bool
	Retention    int64
}

// windowRetention is the retention of a windowed or session aggregation's store: def,
// Kafka's default and the least the windows need, unless m asks for more. A shorter one is
// refused as Kafka's WindowStoreMaterializer, SlidingWindowStoreMaterializer and
// SessionStoreMaterializer refuse it; store names the store ("window store x"), floor what
// def is made of and of which values.
func (m Materialized) windowRetention(store string, def int64, floor string) (int64, error) {
	if !m.HasRetention {
		return def, nil
	}
	if m.Retention < def {
		return 0, fmt.Errorf("the retention period of the %s must be no smaller than %s, retention=[%d] (materialized retention)", store, floor, m.Retention)
	}
	return m.Retention, nil
}

// timeRetention, slidingRetention and sessionRetention are the retentions of the stores of
// aggregations over time, sliding and session windows.
func (m Materialized) timeRetention(store string, w TimeWindows) (int64, error) {
	return m.windowRetention("window store "+store, w.Size+w.Grace,
		fmt.Sprintf("its window size plus the grace period: size=[%d], grace=[%d]", w.Size, w.Grace))
}

func (m Materialized) slidingRetention(store string, w SlidingWindows) (int64, error) {
	return m.windowRetention("window store "+store, 2*w.TimeDifference+w.Grace,
		fmt.Sprintf("2 * time difference plus the grace period: time difference=[%d], grace=[%d]", w.TimeDifference, w.Grace))
}

func (m Materialized) sessionRetention(store string, w SessionWindows) (int64, error) {
	return m.windowRetention("session store "+store, w.Gap+w.Grace,
		fmt.Sprintf("the session inactivity gap plus the grace period: gap=[%d], grace=[%d]", w.Gap, w.Grace))
}

// checkVersioned checks a versioned Materialized of an operation that takes one: it needs
// a store name and a history retention that is not negative.
func (m Materialized) checkVersioned(op string) error {
	switch {
	case !m.Versioned:
		return nil
	case m.StoreName == "":
		return fmt.Errorf("%s: a versioned store needs a name: materialized = {name=, type = \"versionedKeyValue\", historyRetention=}", op)
	case m.HistoryRetention < 0:
		return fmt.Errorf("%s: versioned store %q: history retention %d ms must not be negative", op, m.StoreName, m.HistoryRetention)
	}
	return nil
}

// kvStoreSpec is the key-value store an aggregation keeps its results in: timestamped, or
// versioned as m asks (Kafka's KeyValueStoreWrapper takes either; versioned stores have no
// record cache).
func (m Materialized) kvStoreSpec(name string, serdes Serdes) *StoreSpec {
	s := &StoreSpec{Name: name, Type: TimestampedKeyValueStoreType, Serdes: serdes, Logged: !m.LoggingDisabled, TopicConfig: m.TopicConfig, CachingDisabled: m.CachingDisabled}
	if m.Versioned {
		s.Type, s.HistoryRetention, s.CachingDisabled = VersionedKeyValueStoreType, m.HistoryRetention, true
	}
	return s
}

// checkStoreKind refuses a versioned Materialized on an operation keeping windows or
// sessions: Kafka Streams takes a window or session store there.
func (m Materialized) checkStoreKind(op string, s *StoreSpec) error {
	if m.Versioned && s.Type != VersionedKeyValueStoreType {
		return fmt.Errorf("%s keeps a %s store: a versioned key-value store does not apply there (Kafka Streams takes a window or session store)", op, s.Type)
	}
	return nil
}

// Grouped configures a grouping (Kafka Streams' Grouped): its name prefixes the
// repartition topic; its serdes serialise the repartitioned records.
type Grouped struct {
	Name   string
	Serdes Serdes
}

// KGroupedStream is a stream grouped by key, ready to aggregate.
type KGroupedStream struct {
	s                   *KStream
	grouped             Grouped
	repartitionRequired bool
}

// GroupByKey groups by the current key; a key changed upstream is repartitioned first.
func (s *KStream) GroupByKey(g Grouped) (*KGroupedStream, error) {
	return &KGroupedStream{s: s, grouped: g, repartitionRequired: s.keyChanged}, nil
}

// GroupBy groups by a new key computed from each record (a KEY-SELECT node, then a
// repartition before the aggregation). The Grouped name names the key-selecting node too, as
// in Kafka Streams.
func (s *KStream) GroupBy(fn ValueMapper, g Grouped) (*KGroupedStream, error) {
	ks, err := s.SelectKey(fn, g.Name)
	if err != nil {
		return nil, err
	}
	return &KGroupedStream{s: ks, grouped: g, repartitionRequired: true}, nil
}

// Initializer makes the first aggregate of a key.
type Initializer func() (any, error)

// Aggregator folds a record into an aggregate.
type Aggregator func(rec Record, agg any) (any, error)

// Count counts records per key (KGroupedStream#count); the aggregate is a long.
func (g *KGroupedStream) Count(m Materialized, longSerde Serde, name string) (*KTable, error) {
	if m.Given && m.StoreName == "" {
		g.s.b.index++
	}
	if m.Serdes.Value == nil {
		m.Serdes.Value = longSerde
	}
	return g.aggregate("KSTREAM-AGGREGATE-", m, name, func() Processor {
		return &streamAggregate{
			init: func() (any, error) { return int64(0), nil },
			agg: func(_ Record, agg any) (any, error) {
				n, _ := agg.(int64)
				return n + 1, nil
			},
		}
	})
}

// Reduce combines values per key; the first value of a key is its first aggregate.
func (g *KGroupedStream) Reduce(reducer Aggregator, m Materialized, name string) (*KTable, error) {
	if m.Serdes.Value == nil {
		m.Serdes.Value = g.s.serdes.Value
	}
	return g.aggregate("KSTREAM-REDUCE-", m, name, func() Processor {
		return &streamAggregate{agg: reducer, reduce: true}
	})
}

// Aggregate folds values per key into an aggregate started by init.
func (g *KGroupedStream) Aggregate(init Initializer, agg Aggregator, m Materialized, name string) (*KTable, error) {
	return g.aggregate("KSTREAM-AGGREGATE-", m, name, func() Processor {
		return &streamAggregate{init: init, agg: agg}
	})
}

// aggregate adds a key-value aggregation (see aggregateWith).
func (g *KGroupedStream) aggregate(prefix string, m Materialized, name string, factory func() Processor) (*KTable, error) {
	return g.aggregateWith(prefix, m, name, func(storeName string, serdes Serdes) (*StoreSpec, error) {
		return m.kvStoreSpec(storeName, serdes), nil
	}, func(storeName string, oldValues *bool) Processor {
		p := factory().(*streamAggregate)
		p.store, p.oldValues = storeName, oldValues
		return p
	})
}

// aggregateWith adds the store, the aggregation processor and, if the key may have changed,
// the repartition nodes in between, taking names in Kafka Streams' order: store, processor,
// repartition sink, filter, source.
func (g *KGroupedStream) aggregateWith(prefix string, m Materialized, name string,
	spec func(storeName string, serdes Serdes) (*StoreSpec, error), factory func(storeName string, oldValues *bool) Processor) (*KTable, error) {
	b := g.s.b
	if err := m.checkVersioned("an aggregation"); err != nil {
		return nil, err
	}
	storeName := m.StoreName
	if storeName == "" {
		storeName = b.newName(prefix+"STATE-STORE-", "")
	}
	if _, dup := b.stores[storeName]; dup {
		return nil, fmt.Errorf("store %q is already declared", storeName)
	}
	procName := b.newName(prefix, name)
	keySerde := orSerde(m.Serdes.Key, orSerde(g.grouped.Serdes.Key, g.s.serdes.Key))
	valueSerde := orSerde(g.grouped.Serdes.Value, g.s.serdes.Value)
	parent := g.s.node
	if g.repartitionRequired {
		rp := g.grouped.Name
		if rp == "" {
			rp = storeName
		}
		src, err := b.addRepartition(parent, rp, b.orDefaults(Serdes{Key: keySerde, Value: valueSerde}), 0, nil)
		if err != nil {
			return nil, err
		}
		parent = src
	}
	n, err := b.addNode(&Node{Name: procName, Kind: ProcessorNode, Stores: []string{storeName}})
	if err != nil {
		return nil, err
	}
	ov := false
	n.factory = func() Processor { return factory(storeName, &ov) }
	parent.addChild(n)
	serdes := b.orDefaults(Serdes{Key: keySerde, Value: m.Serdes.Value})
	st, err := spec(storeName, serdes)
	if err != nil {
		return nil, err
	}
	if err := m.checkStoreKind("a windowed aggregation", st); err != nil {
		return nil, err
	}
	b.stores[storeName] = st
	n.valueSerde = serdes.Value
	return &KTable{b: b, node: n, serdes: serdes, store: storeName, oldValues: &ov, versioned: m.Versioned}, nil
}

// streamAggregate is KStreamAggregate / KStreamReduce: null keys and values are dropped and
// counted; the result carries max(record ts, stored ts).
type streamAggregate struct {
	ctx       *Context
	emit      func(Record) error // forward, or through the record cache
	store     string
	init      Initializer
	agg       Aggregator
	reduce    bool
	oldValues *bool
}

func (p *streamAggregate) Init(ctx *Context) error {
	p.ctx = ctx
	p.emit = ctx.emitter(p.store)
	return nil
}

func (p *streamAggregate) Process(rec Record) error {
	if rec.Key == nil {
		p.ctx.Drop(DropNullKey)
		return nil
	}
	if rec.Value == nil {
		p.ctx.Drop(DropNullValue)
		return nil
	}
	store, err := p.ctx.store(p.store, rec.Partition)
	if err != nil {
		return err
	}
	kb, old, oldTs, found, err := store.getForUpdate(rec.Key)
	if err != nil {
		return err
	}
	ts := rec.Timestamp
	if found {
		ts = max(ts, oldTs)
	}
	next, err := fold(rec, old, p.reduce, p.init, p.agg)
	if err != nil {
		return err
	}
	if err := store.putSerialized(kb, next, ts); err != nil {
		return err
	}
	c := Change{New: next}
	if *p.oldValues {
		c.Old = old
	}
	rec.Value, rec.Timestamp = c, ts
	return p.emit(rec)
}

// fold adds a record to an aggregate: agg(rec, base) when there is one; without one, the
// value itself for a reduce, else agg(rec, init()).
func fold(rec Record, base any, reduce bool, init Initializer, agg Aggregator) (any, error) {
	switch {
	case base != nil:
		return agg(rec, base)
	case reduce:
		return rec.Value, nil
	}
	start, err := init()
	if err != nil {
		return nil, err
	}
	return agg(rec, start)
}

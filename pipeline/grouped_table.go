package pipeline

import (
	"fmt"
	"reflect"
)

// KGroupedTable is a table re-grouped by a new key, ready to aggregate with an adder and a
// subtractor (Kafka Streams' KGroupedTable).
type KGroupedTable struct {
	t       *KTable
	sel     *Node
	grouped Grouped
	serdes  Serdes
}

// GroupBy re-keys a table (KTable#groupBy): a KTABLE-SELECT node (named by the Grouped
// name, as in Kafka Streams) maps new and old values, so that the aggregation downstream
// can subtract what a key no longer holds.
func (t *KTable) GroupBy(fn KeyValueMapper, g Grouped) (*KGroupedTable, error) {
	n, err := t.b.addNode(&Node{Name: t.b.newName("KTABLE-SELECT-", g.Name), Kind: ProcessorNode, factory: func() Processor { return &tableSelect{fn: fn} }})
	if err != nil {
		return nil, err
	}
	t.node.addChild(n)
	t.enableSendingOldValues()
	return &KGroupedTable{t: t, sel: n, grouped: g, serdes: g.Serdes}, nil
}

var errNullGroupingKey = kafkaMessage("Record key for the grouping KTable should not be null.")

// tableSelect is KTableRepartitionMap: an update that moves a key sends the subtraction to
// the old key first, then the addition to the new one; a row without a key is an error.
type tableSelect struct {
	ctx *Context
	fn  KeyValueMapper
}

func (p *tableSelect) Init(ctx *Context) error { p.ctx = ctx; return nil }

func (p *tableSelect) Process(rec Record) error {
	c, _ := rec.Value.(Change)
	if c.OutOfOrder {
		// An aggregate of a versioned table holds the latest versions only (KIP-914).
		return nil
	}
	if rec.Key == nil {
		return errNullGroupingKey
	}
	var newKey, newVal, oldKey, oldVal any
	var err error
	if c.New != nil {
		r := rec
		r.Value = c.New
		if newKey, newVal, err = p.fn(r); err != nil {
			return err
		}
	}
	if c.Old != nil {
		r := rec
		r.Value = c.Old
		if oldKey, oldVal, err = p.fn(r); err != nil {
			return err
		}
	}
	// A pair with no key or no value goes nowhere (KTableRepartitionMap skips it).
	if newKey == nil {
		newVal = nil
	}
	if oldKey == nil {
		oldVal = nil
	}
	if newVal != nil && oldVal != nil && sameKey(newKey, oldKey) {
		out := rec
		out.Key, out.Value = newKey, Change{New: newVal, Old: oldVal}
		return p.ctx.Forward(out)
	}
	if oldVal != nil {
		out := rec
		out.Key, out.Value = oldKey, Change{Old: oldVal}
		if err := p.ctx.Forward(out); err != nil {
			return err
		}
	}
	if newVal != nil {
		out := rec
		out.Key, out.Value = newKey, Change{New: newVal}
		return p.ctx.Forward(out)
	}
	return nil
}

// sameKey compares deserialised keys, as Java compares keys with equals.
func sameKey(a, b any) bool { return reflect.DeepEqual(a, b) }

// Count counts the rows per new key.
func (g *KGroupedTable) Count(m Materialized, longSerde Serde, name string) (*KTable, error) {
	if m.Given && m.StoreName == "" {
		g.t.b.index++
	}
	if m.Serdes.Value == nil {
		m.Serdes.Value = longSerde
	}
	one := func(sign int64) Aggregator {
		return func(_ Record, agg any) (any, error) {
			n, _ := agg.(int64)
			return n + sign, nil
		}
	}
	return g.aggregate("KTABLE-AGGREGATE-", m, name, func() (any, error) { return int64(0), nil }, one(1), one(-1), false)
}

// Reduce combines rows per new key with an adder and a subtractor.
func (g *KGroupedTable) Reduce(adder, subtractor Aggregator, m Materialized, name string) (*KTable, error) {
	if m.Serdes.Value == nil {
		m.Serdes.Value = orSerde(g.serdes.Value, g.t.serdes.Value)
	}
	return g.aggregate("KTABLE-REDUCE-", m, name, nil, adder, subtractor, true)
}

// Aggregate folds rows per new key with an initializer, an adder and a subtractor.
func (g *KGroupedTable) Aggregate(init Initializer, adder, subtractor Aggregator, m Materialized, name string) (*KTable, error) {
	return g.aggregate("KTABLE-AGGREGATE-", m, name, init, adder, subtractor, false)
}

// aggregate takes names in Kafka Streams' order for a KGroupedTable: store, repartition
// sink, repartition source, processor. The repartition has no null-key filter.
func (g *KGroupedTable) aggregate(prefix string, m Materialized, name string, init Initializer, adder, subtractor Aggregator, reduce bool) (*KTable, error) {
	b := g.t.b
	if err := m.checkVersioned("a table aggregation"); err != nil {
		return nil, err
	}
	storeName := m.StoreName
	if storeName == "" {
		storeName = b.newName(prefix+"STATE-STORE-", "")
	}
	if _, dup := b.stores[storeName]; dup {
		return nil, fmt.Errorf("store %q is already declared", storeName)
	}
	topicPrefix := g.grouped.Name
	if topicPrefix == "" {
		topicPrefix = storeName
	}
	topic := topicPrefix + "-repartition"
	// The repartition topic's serdes are Grouped's, else the defaults, as in
	// KGroupedTableImpl; the store's key serde is Materialized's, else the repartition's.
	changed := changedSerde{keys: b.orDefaults(Serdes{Key: g.serdes.Key}).Key, values: b.orDefaults(Serdes{Value: g.serdes.Value}).Value}
	keySerde := b.orDefaults(Serdes{Key: orSerde(m.Serdes.Key, g.serdes.Key)}).Key
	sinkName := b.newName("KSTREAM-SINK-", "")
	sourceName := b.newName("KSTREAM-SOURCE-", "")
	source, err := b.addNode(&Node{Name: sourceName, Kind: SourceNode, Topics: []string{topic}, Internal: true})
	if err != nil {
		return nil, err
	}
	sink, err := b.addNode(&Node{
		Name: sinkName, Kind: SinkNode, Topic: topic, Internal: true,
		sink: &sinkSpec{topic: topic, serdes: Serdes{Key: changed.keys}, repartitionTo: source,
			decodeInternal: changed.decode, encodeInternal: changed.encode},
	})
	if err != nil {
		return nil, err
	}
	g.sel.addChild(sink)
	n, err := b.addNode(&Node{Name: b.newName(prefix, name), Kind: ProcessorNode, Stores: []string{storeName}})
	if err != nil {
		return nil, err
	}
	ov := false
	n.factory = func() Processor {
		return &tableAggregate{store: storeName, init: init, adder: adder, subtractor: subtractor, reduce: reduce, oldValues: &ov}
	}
	source.addChild(n)
	serdes := b.orDefaults(Serdes{Key: keySerde, Value: m.Serdes.Value})
	b.stores[storeName] = m.kvStoreSpec(storeName, serdes)
	n.valueSerde = serdes.Value
	return &KTable{b: b, node: n, serdes: serdes, store: storeName, oldValues: &ov, versioned: m.Versioned}, nil
}

// tableAggregate is KTableAggregate / KTableReduce: subtract the old value, add the new
// one; the aggregate is never deleted (a count stays at 0).
type tableAggregate struct {
	ctx               *Context
	emit              func(Record) error // forward, or through the record cache
	store             string
	init              Initializer
	adder, subtractor Aggregator
	reduce            bool
	oldValues         *bool
}

func (p *tableAggregate) Init(ctx *Context) error {
	p.ctx = ctx
	p.emit = ctx.emitter(p.store)
	return nil
}

func (p *tableAggregate) Process(rec Record) error {
	if rec.Key == nil {
		return errNullGroupingKey
	}
	c, _ := rec.Value.(Change)
	store, err := p.ctx.store(p.store, rec.Partition)
	if err != nil {
		return err
	}
	old, oldTs, found, err := store.Get(rec.Key)
	if err != nil {
		return err
	}
	agg := old
	ts := rec.Timestamp
	if found {
		ts = max(ts, oldTs)
	}
	if c.Old != nil && agg != nil {
		r := rec
		r.Value = c.Old
		if agg, err = p.subtractor(r, agg); err != nil {
			return err
		}
	}
	if c.New != nil {
		r := rec
		r.Value = c.New
		if agg, err = fold(r, agg, p.reduce, p.init, p.adder); err != nil {
			return err
		}
	}
	if err := store.Put(rec.Key, agg, ts); err != nil {
		return err
	}
	out := Change{New: agg}
	if *p.oldValues {
		out.Old = old
	}
	rec.Value, rec.Timestamp = out, ts
	return p.emit(rec)
}

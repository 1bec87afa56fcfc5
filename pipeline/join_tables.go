package pipeline

import "fmt"

// TableJoinKind is the kind of a table-table equi-join.
type TableJoinKind int

const (
	InnerTableJoin TableJoinKind = iota
	LeftTableJoin
	OuterTableJoin
)

func (k TableJoinKind) String() string {
	switch k {
	case LeftTableJoin:
		return "leftJoin"
	case OuterTableJoin:
		return "outerJoin"
	}
	return "join"
}

// JoinTable joins this table with other on their keys (KTable#join, #leftJoin, #outerJoin).
// The joiner gets this table's value as rec.Value and other's as its second argument; either
// is nil where the kind allows an absent side. Both tables must have stores: each side's
// update reads the other side's current value from the other store's partition for the
// record (the inputs are co-partitioned by key).
//
// Names are taken in Kafka Streams' order (KTableImpl#doJoin): a materialized result's store
// KTABLE-MERGE-STATE-STORE-%010d (unless named), then the merge processor KTABLE-MERGE-%010d,
// then KTABLE-JOINTHIS-%010d and KTABLE-JOINOTHER-%010d. A name n names them n,
// n-join-this and n-join-other, each still taking its index. The result is materialized
// only when m.Given.
func (t *KTable) JoinTable(other *KTable, joiner ValueJoinerWithKey, kind TableJoinKind, name string, m Materialized) (*KTable, error) {
	if other == nil || other.b != t.b {
		return nil, fmt.Errorf("%s: the other table must come from the same builder", kind)
	}
	thisRows, err := t.getter()
	if err != nil {
		return nil, fmt.Errorf("%s: this side: %w", kind, err)
	}
	otherRows, err := other.getter()
	if err != nil {
		return nil, fmt.Errorf("%s: other side: %w", kind, err)
	}
	b := t.b
	if err := m.checkVersioned(kind.String()); err != nil {
		return nil, err
	}
	storeName := ""
	if m.Given {
		storeName = m.StoreName
		if storeName == "" {
			storeName = b.newName("KTABLE-MERGE-STATE-STORE-", "")
		}
		if _, dup := b.stores[storeName]; dup {
			return nil, fmt.Errorf("%s: store %q is already declared", kind, storeName)
		}
	}
	mergeName := b.newName("KTABLE-MERGE-", name)
	suffixed := func(suffix string) string {
		if name == "" {
			return ""
		}
		return name + suffix
	}
	thisName := b.newName("KTABLE-JOINTHIS-", suffixed("-join-this"))
	otherName := b.newName("KTABLE-JOINOTHER-", suffixed("-join-other"))

	// Kafka Streams forces old values on the sides whose deletes must reach an absent
	// partner's result: this side for left joins, both sides for outer joins.
	if kind != InnerTableJoin {
		t.enableSendingOldValues()
	}
	if kind == OuterTableJoin {
		other.enableSendingOldValues()
	}

	thisMode, otherMode := joinInner, joinInner
	switch kind {
	case LeftTableJoin:
		thisMode, otherMode = joinLeft, joinRight
	case OuterTableJoin:
		thisMode, otherMode = joinOuter, joinOuter
	}
	ov := false
	thisNode, err := b.addNode(&Node{Name: thisName, Kind: ProcessorNode, Stores: otherRows.stores,
		factory: func() Processor {
			return &tableJoinSide{partner: otherRows, joiner: joiner, mode: thisMode, oldValues: &ov}
		}})
	if err != nil {
		return nil, err
	}
	otherNode, err := b.addNode(&Node{Name: otherName, Kind: ProcessorNode, Stores: thisRows.stores,
		factory: func() Processor {
			return &tableJoinSide{partner: thisRows, joiner: joiner, mode: otherMode, reversed: true, oldValues: &ov}
		}})
	if err != nil {
		return nil, err
	}
	merge := &Node{Name: mergeName, Kind: ProcessorNode, factory: func() Processor {
		return &tableJoinMerge{store: storeName, versioned: m.Versioned, oldValues: &ov}
	}}
	if storeName != "" {
		merge.Stores = []string{storeName}
	}
	if _, err := b.addNode(merge); err != nil {
		return nil, err
	}
	t.node.addChild(thisNode)
	other.node.addChild(otherNode)
	b.copartition(t.node, other.node)
	thisNode.addChild(merge)
	otherNode.addChild(merge)

	serdes := Serdes{Key: orSerde(m.Serdes.Key, t.serdes.Key), Value: m.Serdes.Value}
	merge.valueSerde = serdes.Value
	out := &KTable{b: b, node: merge, serdes: serdes, store: storeName, oldValues: &ov, versioned: m.Versioned}
	if storeName != "" {
		st := m.kvStoreSpec(storeName, b.orDefaults(serdes))
		st.CachingDisabled = m.Versioned // versioned stores have no record cache
		b.stores[storeName] = st
	}
	// enableSendingOldValues runs each table's materialize hook; a join result has two
	// parents, and its old values are computed from both inputs' old values
	// (KTableKTableJoinMerger#enableSendingOldValues), so its hook asks both sides.
	out.materialize = func() {
		t.enableSendingOldValues()
		other.enableSendingOldValues()
	}
	if storeName == "" {
		out.derivedGetter = joinGetter(t, other, joiner, kind)
	}
	return out, nil
}

type joinMode int

const (
	joinInner joinMode = iota
	joinLeft           // this side of a left join: the other side may be absent
	joinRight          // other side of a left join: this side must be present
	joinOuter
)

// tableJoinSide is one side of a table-table join (KTableKTableInnerJoin, -LeftJoin,
// -RightJoin, -OuterJoin): it joins the update of its table with the partner's current
// value. reversed marks the other table's side, whose record value is the joiner's second
// argument.
type tableJoinSide struct {
	ctx      *Context
	partner  *tableGetter // the other table's rows
	joiner   ValueJoinerWithKey
	mode     joinMode
	reversed bool
	// oldValues is the join result's: set when a downstream operator needs old values.
	oldValues *bool
}

func (p *tableJoinSide) Init(ctx *Context) error { p.ctx = ctx; return nil }

func (p *tableJoinSide) Process(rec Record) error {
	if rec.Key == nil {
		p.ctx.Drop(DropNullKey)
		return nil
	}
	c, _ := rec.Value.(Change)
	if c.OutOfOrder {
		p.ctx.Drop(DropOutOfOrder) // KIP-914: a join holds the latest versions only
		return nil
	}
	partner, partnerTs, found, err := p.partner.get(p.ctx, rec, rec.Key)
	if err != nil {
		return err
	}
	if !found {
		partner = nil
	}
	ts := rec.Timestamp
	if partner != nil {
		ts = max(ts, partnerTs)
	} else if p.mode == joinInner || p.mode == joinRight || (c.New == nil && c.Old == nil) {
		return nil
	}
	// wanted reports whether a side's value (new or old) yields a joined value.
	wanted := func(v any) bool {
		switch p.mode {
		case joinRight:
			return true
		case joinOuter:
			return v != nil || partner != nil
		}
		return v != nil
	}
	var out Change
	if wanted(c.New) {
		if out.New, err = p.join(rec, c.New, partner); err != nil {
			return err
		}
	}
	if *p.oldValues && wanted(c.Old) {
		if out.Old, err = p.join(rec, c.Old, partner); err != nil {
			return err
		}
	}
	rec.Value, rec.Timestamp = out, ts
	return p.ctx.Forward(rec)
}

// join calls the joiner with this table's value first.
func (p *tableJoinSide) join(rec Record, v, partner any) (any, error) {
	if p.reversed {
		v, partner = partner, v
	}
	rec.Value = v
	return p.joiner(rec, partner)
}

// tableJoinMerge is KTableKTableJoinMerger: it unites both sides' results, keeps them in
// the result's store when materialized, and drops old values nobody asked for.
type tableJoinMerge struct {
	ctx   *Context
	store string
	// versioned: the store is versioned, and a result older than the key's latest is kept
	// in its history and forwarded marked out of order (KTableKTableJoinMerger, KIP-914).
	versioned bool
	oldValues *bool
}

func (p *tableJoinMerge) Init(ctx *Context) error { p.ctx = ctx; return nil }

func (p *tableJoinMerge) Process(rec Record) error {
	c, _ := rec.Value.(Change)
	if p.versioned {
		store, err := p.ctx.versionedStore(p.store, rec.Partition)
		if err != nil {
			return err
		}
		outOfOrder, kept, err := p.ctx.putVersioned(store, rec, c.New)
		if err != nil || !kept {
			return err
		}
		c.OutOfOrder = outOfOrder
	} else if p.store != "" {
		store, err := p.ctx.store(p.store, rec.Partition)
		if err != nil {
			return err
		}
		if err := store.Put(rec.Key, c.New, rec.Timestamp); err != nil {
			return err
		}
	}
	if !*p.oldValues {
		c.Old = nil
	}
	rec.Value = c
	return p.ctx.Forward(rec)
}

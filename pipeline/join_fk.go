package pipeline

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
)

// ForeignKeyExtractor returns the foreign key of a left-table row (rec.Key, rec.Value); nil
// means the row has no foreign key.
type ForeignKeyExtractor func(rec Record) (any, error)

// JoinForeignKey joins this table with other through a foreign key extracted from this
// table's values (KTable#join/#leftJoin(KTable, Function | BiFunction, ValueJoiner), KIP-213,
// KIP-1104). The result is keyed by this table's key; the joiner gets this table's value as
// rec.Value and other's value (nil in a left join without a match) as its second argument.
//
// Kafka Streams routes subscriptions and responses through two internal topics; in one
// process the results are computed directly and come out as after the round trip. A
// subscription store keyed [4-byte FK length][FK bytes][PK bytes], holding the left row's
// partition, lets an update of other re-join every row that references it. The store
// partition, and the partition of other's store that is read, is DefaultPartition(FK bytes),
// where Kafka Streams would send the subscription.
//
// Names: KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-%010d (this side), the store
// KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-%010d, KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-%010d
// (other's side), KTABLE-FK-JOIN-OUTPUT-%010d, then the result's store
// KTABLE-FK-JOIN-OUTPUT-STATE-STORE-%010d when materialized without a name. A name n names
// them n-subscription-registration, n-subscription-store, n-subscription-processor and n.
// Kafka Streams' indices differ: its topic sink and source nodes take indices too.
//
// tj's partitioners (TableJoined) choose the partitions Kafka Streams' subscription and
// response topics would carry a record to: OtherPartitioner the partition of a foreign key
// (where the other table's row and the subscription are), Partitioner that of a result's
// key. The foreign key is serialised with other's key serde as Kafka Streams does: for the
// subscription key under the pseudo-topic <application.id>-<registration topic>-fk (the
// primary key under -pk), for the default partition under the registration topic.
func (t *KTable) JoinForeignKey(other *KTable, fk ForeignKeyExtractor, joiner ValueJoinerWithKey, left bool, tj TableJoined, m Materialized) (*KTable, error) {
	name := tj.Name
	kind := InnerTableJoin
	if left {
		kind = LeftTableJoin
	}
	what := kind.String() + " (foreign key)"
	if other == nil || other.b != t.b {
		return nil, fmt.Errorf("%s: the other table must come from the same builder", what)
	}
	if err := m.checkVersioned(what); err != nil {
		return nil, err
	}
	// The subscription side needs old values to find the foreign key a row leaves.
	t.enableSendingOldValues()
	thisStore, err := joinStore(t, kind, "this")
	if err != nil {
		return nil, err
	}
	otherStore, err := joinStore(other, kind, "other")
	if err != nil {
		return nil, err
	}
	b := t.b
	suffixed := func(suffix string) string {
		if name == "" {
			return ""
		}
		return name + suffix
	}
	regName := b.newName("KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-", suffixed("-subscription-registration"))
	subStore := b.newName("KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-", suffixed("-subscription-store"))
	if _, dup := b.stores[subStore]; dup {
		return nil, fmt.Errorf("%s: store %q is already declared", what, subStore)
	}
	procName := b.newName("KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-", suffixed("-subscription-processor"))
	outName := b.newName("KTABLE-FK-JOIN-OUTPUT-", name)
	storeName := ""
	if m.Given {
		storeName = m.StoreName
		if storeName == "" {
			storeName = b.newName("KTABLE-FK-JOIN-OUTPUT-STATE-STORE-", "")
		}
		if _, dup := b.stores[storeName]; dup {
			return nil, fmt.Errorf("%s: store %q is already declared", what, storeName)
		}
	}

	spec := &fkJoinSpec{fk: fk, joiner: joiner, left: left, subs: subStore, this: thisStore, other: otherStore,
		thisKeys: b.orDefaults(t.serdes).Key, otherKeys: b.orDefaults(other.serdes).Key,
		registration: regName + "-topic", response: strings.Replace(regName, "REGISTRATION", "RESPONSE", 1) + "-topic",
		partitioner: tj.Partitioner, otherPartitioner: tj.OtherPartitioner}
	if name != "" {
		spec.response = name + "-subscription-response-topic"
	}
	reg, err := b.addNode(&Node{Name: regName, Kind: ProcessorNode, Stores: []string{subStore, otherStore}, crossPartition: true,
		factory: func() Processor { return &fkJoinThis{spec: spec} }})
	if err != nil {
		return nil, err
	}
	proc, err := b.addNode(&Node{Name: procName, Kind: ProcessorNode, Stores: []string{subStore, thisStore}, crossPartition: true,
		factory: func() Processor { return &fkJoinOther{spec: spec} }})
	if err != nil {
		return nil, err
	}
	ov := false
	out := &fkJoinOutSpec{store: storeName, versioned: m.Versioned}
	outNode, err := b.addNode(&Node{Name: outName, Kind: ProcessorNode, factory: func() Processor { return &fkJoinOutput{spec: out, oldValues: &ov} }})
	if err != nil {
		return nil, err
	}
	b.stores[subStore] = &StoreSpec{Name: subStore, Type: KeyValueStoreType, Serdes: Serdes{Key: rawBytesSerde{}, Value: rawBytesSerde{}}, Logged: true}
	t.node.addChild(reg)
	other.node.addChild(proc)
	reg.addChild(outNode)
	proc.addChild(outNode)

	serdes := Serdes{Key: orSerde(m.Serdes.Key, t.serdes.Key), Value: m.Serdes.Value}
	result := &KTable{b: b, node: outNode, serdes: serdes, oldValues: &ov, versioned: m.Versioned}
	materialize := func(n string) {
		out.store = n
		result.store = n
		outNode.Stores = []string{n}
		st := m.kvStoreSpec(n, b.orDefaults(serdes))
		st.CachingDisabled = m.Versioned // versioned stores have no record cache
		b.stores[n] = st
	}
	if storeName != "" {
		materialize(storeName)
	}
	// Old values of the result come from its own store, as for a source table.
	result.materialize = func() {
		if out.store == "" {
			materialize(b.newName("KTABLE-FK-JOIN-OUTPUT-STATE-STORE-", ""))
		}
	}
	return result, nil
}

// TableJoined configures a foreign-key join (Kafka Streams' TableJoined): its name and the
// partitioners of this table's keys (the response topic's) and of foreign keys (the
// subscription topic's); nil partitioners are the default. A partitioner must choose
// exactly one partition.
type TableJoined struct {
	Name             string
	Partitioner      StreamPartitioner
	OtherPartitioner StreamPartitioner
}

type fkJoinSpec struct {
	fk     ForeignKeyExtractor
	joiner ValueJoinerWithKey
	left   bool
	subs   string // subscription store
	this   string // this table's store
	other  string // other table's store
	// thisKeys and otherKeys are the tables' key serdes; registration and response are the
	// names of Kafka Streams' subscription and response topics, without the application id.
	thisKeys, otherKeys           Serde
	registration, response        string
	partitioner, otherPartitioner StreamPartitioner
}

// partition is where a key goes in one of the join's topics: the partitioner's single
// choice (FK joins need a singleton, as Kafka Streams says), else murmur2 of the key
// serialised for the topic.
func (s *fkJoinSpec) partition(ctx *Context, topicName string, partitioner StreamPartitioner, keys Serde, rec Record, key any) (int32, error) {
	n := partitionsOf(ctx)
	topic := ctx.internalTopic(topicName)
	if partitioner != nil {
		r := rec
		r.Key, r.Value = key, nil
		parts, ok, err := partitioner(topic, r, n)
		if err != nil {
			return 0, fmt.Errorf("partitioner: %w", err)
		}
		if ok {
			if len(parts) != 1 {
				return 0, kafkaMessage("The partitions returned by StreamPartitioner#partitions method when used for FK join should be a singleton set")
			}
			if parts[0] < 0 || parts[0] >= n {
				return 0, fmt.Errorf("partitioner returned partition %d, but %s has %d partitions", parts[0], topic, n)
			}
			return parts[0], nil
		}
	}
	kb, err := keys.Serialize(topic, rec.Headers, key)
	if err != nil {
		return 0, fmt.Errorf("serialize key for %s: %w", topic, err)
	}
	return DefaultPartition(kb, n), nil
}

// subscriptionKeyOf is CombinedKeySchema#toBytes: the foreign key and the primary key
// serialised under their pseudo-topics.
func (s *fkJoinSpec) subscriptionKeyOf(ctx *Context, fkBytes []byte, pk any) ([]byte, error) {
	pb, err := s.thisKeys.Serialize(ctx.internalTopic(s.registration)+"-pk", nil, pk)
	if err != nil {
		return nil, fmt.Errorf("primary key: %w", err)
	}
	return subscriptionKey(fkBytes, pb), nil
}

// foreignKeyBytes serialises a foreign key for the subscription store's keys.
func (s *fkJoinSpec) foreignKeyBytes(ctx *Context, fk any) ([]byte, error) {
	fb, err := s.otherKeys.Serialize(ctx.internalTopic(s.registration)+"-fk", nil, fk)
	if err != nil {
		return nil, fmt.Errorf("foreign key: %w", err)
	}
	return fb, nil
}

// subscriptionKey is Kafka Streams' CombinedKey layout: the length prefix keeps one foreign
// key's subscriptions from matching a prefix scan of a shorter foreign key.
func subscriptionKey(fk, pk []byte) []byte {
	k := make([]byte, 4, 4+len(fk)+len(pk))
	binary.BigEndian.PutUint32(k, uint32(len(fk)))
	return append(append(k, fk...), pk...)
}

func subscriptionPrefix(fk []byte) []byte { return subscriptionKey(fk, nil) }

// partitionsOf is the partition count subscriptions are spread over: that of the
// topology's source topics, as for repartition topics.
func partitionsOf(ctx *Context) int32 { return max(ctx.maxSourcePartitions(), 1) }

// fkJoinThis handles updates of this table: it keeps the row's subscription and emits what
// Kafka Streams' subscription instructions (SubscriptionSendProcessorSupplier) lead to once
// answered (SubscriptionJoinProcessorSupplier, ResponseJoinProcessorSupplier).
type fkJoinThis struct {
	ctx  *Context
	spec *fkJoinSpec
}

func (p *fkJoinThis) Init(ctx *Context) error { p.ctx = ctx; return nil }

// foreignKey extracts and serialises a value's foreign key; nil bytes when v or its key is nil.
func (p *fkJoinThis) foreignKey(rec Record, v any) (any, []byte, error) {
	if v == nil {
		return nil, nil, nil
	}
	rec.Value = v
	fk, err := p.spec.fk(rec)
	if err != nil || fk == nil {
		return nil, nil, err
	}
	fb, err := p.spec.foreignKeyBytes(p.ctx, fk)
	return fk, fb, err
}

type fkInstruction int

const (
	deleteNoPropagate fkInstruction = iota
	deleteAndPropagate
	propagateNullIfNoValue
	propagateOnlyIfValue
)

func (p *fkJoinThis) Process(rec Record) error {
	if rec.Key == nil {
		p.ctx.Drop(DropNullKey)
		return nil
	}
	c, _ := rec.Value.(Change)
	if c.OutOfOrder {
		p.ctx.Drop(DropOutOfOrder) // KIP-914
		return nil
	}
	oldFK, oldBytes, err := p.foreignKey(rec, c.Old)
	if err != nil {
		return err
	}
	newFK, newBytes, err := p.foreignKey(rec, c.New)
	if err != nil {
		return err
	}
	type send struct {
		fk    any
		bytes []byte
		ins   fkInstruction
	}
	var sends []send
	changed := !bytes.Equal(oldBytes, newBytes)
	switch {
	case p.spec.left:
		// KIP-962: a left join answers every row, even one without a foreign key.
		if c.Old != nil && oldFK != nil && changed {
			sends = append(sends, send{oldFK, oldBytes, deleteAndPropagate})
		}
		if c.Old != nil || c.New != nil {
			sends = append(sends, send{newFK, newBytes, propagateNullIfNoValue})
		}
	case c.Old != nil && c.New != nil:
		switch {
		case oldFK == nil && newFK == nil:
			p.ctx.Drop(DropNullForeignKey)
		case oldFK == nil:
			sends = append(sends, send{newFK, newBytes, propagateNullIfNoValue})
		case newFK == nil:
			sends = append(sends, send{oldFK, oldBytes, deleteAndPropagate})
		default:
			if changed {
				sends = append(sends, send{oldFK, oldBytes, deleteNoPropagate})
			}
			sends = append(sends, send{newFK, newBytes, propagateNullIfNoValue})
		}
	case c.Old != nil:
		if oldFK == nil {
			p.ctx.Drop(DropNullForeignKey)
		} else {
			sends = append(sends, send{oldFK, oldBytes, deleteAndPropagate})
		}
	case c.New != nil:
		if newFK == nil {
			p.ctx.Drop(DropNullForeignKey)
		} else {
			sends = append(sends, send{newFK, newBytes, propagateOnlyIfValue})
		}
	}
	for _, s := range sends {
		if err := p.apply(rec, c.New, s.fk, s.bytes, s.ins); err != nil {
			return err
		}
	}
	return nil
}

// apply carries out one instruction for row rec.Key, whose current value is current.
func (p *fkJoinThis) apply(rec Record, current, fk any, fkBytes []byte, ins fkInstruction) error {
	var foreign any
	ts := rec.Timestamp
	// The result goes where the response topic would carry it: the row's own partition
	// (the subscription's primary partition, KAFKA-13769) unless a partitioner says.
	respPart := rec.Partition
	if p.spec.partitioner != nil {
		var err error
		if respPart, err = p.spec.partition(p.ctx, p.spec.response, p.spec.partitioner, p.spec.thisKeys, rec, rec.Key); err != nil {
			return err
		}
	}
	if fk != nil {
		part, err := p.spec.partition(p.ctx, p.spec.registration, p.spec.otherPartitioner, p.spec.otherKeys, rec, fk)
		if err != nil {
			return err
		}
		subs, err := p.ctx.store(p.spec.subs, part)
		if err != nil {
			return err
		}
		sk, err := p.spec.subscriptionKeyOf(p.ctx, fkBytes, rec.Key)
		if err != nil {
			return err
		}
		if ins == deleteNoPropagate || ins == deleteAndPropagate {
			if err := subs.bytes.Put(sk, nil, rec.Timestamp, nil); err != nil {
				return err
			}
		} else {
			if err := subs.bytes.Put(sk, binary.BigEndian.AppendUint32(nil, uint32(respPart)), rec.Timestamp, nil); err != nil {
				return err
			}
			other, err := p.ctx.store(p.spec.other, part)
			if err != nil {
				return err
			}
			v, vts, found, err := other.Get(fk)
			if err != nil {
				return err
			}
			if found && v != nil {
				foreign, ts = v, max(ts, vts)
			}
		}
	}
	switch ins {
	case deleteNoPropagate:
		return nil
	case deleteAndPropagate:
		foreign = nil
	case propagateOnlyIfValue:
		if foreign == nil {
			return nil
		}
	}
	rec.Partition = respPart
	return resolveFK(p.ctx, p.spec, rec, current, foreign, ts)
}

// resolveFK is ResponseJoinProcessorSupplier for an answer with no stale hash (in one
// process every answer is about the row's current value): a missing foreign value
// tombstones an inner join's result and a deleted row's.
func resolveFK(ctx *Context, spec *fkJoinSpec, rec Record, current, foreign any, ts int64) error {
	var out any
	if foreign != nil || (spec.left && current != nil) {
		r := rec
		r.Value = current
		v, err := spec.joiner(r, foreign)
		if err != nil {
			return err
		}
		out = v
	}
	rec.Value, rec.Timestamp = Change{New: out}, ts
	return ctx.ForwardAt(rec.Partition, rec)
}

// fkJoinOther handles updates of the other table: it re-joins every row subscribed to the
// updated key (ForeignTableJoinProcessorSupplier), at the update's timestamp.
type fkJoinOther struct {
	ctx  *Context
	spec *fkJoinSpec
}

func (p *fkJoinOther) Init(ctx *Context) error { p.ctx = ctx; return nil }

func (p *fkJoinOther) Process(rec Record) error {
	if rec.Key == nil {
		p.ctx.Drop(DropNullKey)
		return nil
	}
	c, _ := rec.Value.(Change)
	if c.OutOfOrder {
		p.ctx.Drop(DropOutOfOrder) // KIP-914
		return nil
	}
	subs, err := p.ctx.store(p.spec.subs, rec.Partition)
	if err != nil {
		return err
	}
	fb, err := p.spec.foreignKeyBytes(p.ctx, rec.Key)
	if err != nil {
		return err
	}
	prefix := subscriptionPrefix(fb)
	type subscriber struct {
		pk        []byte
		partition int32
	}
	var found []subscriber
	it := subs.bytes.PrefixScan(prefix)
	for it.Next() {
		v := it.Value()
		if len(v) != 4 {
			it.Close()
			return fmt.Errorf("subscription store %s: corrupt entry (value of %d bytes)", p.spec.subs, len(v))
		}
		found = append(found, subscriber{pk: bytes.Clone(it.Key()[len(prefix):]), partition: int32(binary.BigEndian.Uint32(v))})
	}
	err = it.Err()
	it.Close()
	if err != nil {
		return err
	}
	for _, s := range found {
		this, err := p.ctx.store(p.spec.this, s.partition)
		if err != nil {
			return err
		}
		pk, err := p.spec.thisKeys.Deserialize(p.ctx.internalTopic(p.spec.registration)+"-pk", nil, s.pk)
		if err != nil {
			return fmt.Errorf("primary key: %w", err)
		}
		current, _, ok, err := this.Get(pk)
		if err != nil {
			return err
		}
		if !ok || current == nil {
			continue
		}
		out := rec
		out.Key, out.Partition = pk, s.partition
		if err := resolveFK(p.ctx, p.spec, out, current, c.New, rec.Timestamp); err != nil {
			return err
		}
	}
	return nil
}

// fkJoinOutSpec is the result's store, when materialized; versioned: a versioned one, as
// the result's KTableSource keeps it (KIP-914).
type fkJoinOutSpec struct {
	store     string
	versioned bool
}

// fkJoinOutput is the result table's node: it keeps the result in its store when
// materialized, taking old values from there.
type fkJoinOutput struct {
	ctx       *Context
	spec      *fkJoinOutSpec
	oldValues *bool
}

func (p *fkJoinOutput) Init(ctx *Context) error { p.ctx = ctx; return nil }

func (p *fkJoinOutput) Process(rec Record) error {
	c, _ := rec.Value.(Change)
	if p.spec.versioned {
		return p.processVersioned(rec, c)
	}
	if p.spec.store != "" {
		store, err := p.ctx.store(p.spec.store, rec.Partition)
		if err != nil {
			return err
		}
		old, _, found, err := store.Get(rec.Key)
		if err != nil {
			return err
		}
		if found && *p.oldValues {
			c.Old = old
		}
		if err := store.Put(rec.Key, c.New, rec.Timestamp); err != nil {
			return err
		}
	}
	rec.Value = c
	return p.ctx.Forward(rec)
}

// processVersioned keeps the result in a versioned store: the old value is the key's latest
// version, a result older than it stays in the history and is forwarded marked out of order,
// one older than the history retention is dropped (counted).
func (p *fkJoinOutput) processVersioned(rec Record, c Change) error {
	store, err := p.ctx.versionedStore(p.spec.store, rec.Partition)
	if err != nil {
		return err
	}
	old, _, err := store.Get(rec.Key)
	if err != nil {
		return err
	}
	outOfOrder, kept, err := p.ctx.putVersioned(store, rec, c.New)
	if err != nil || !kept {
		return err
	}
	c.OutOfOrder = outOfOrder
	if *p.oldValues {
		c.Old = old.Value
	}
	rec.Value = c
	return p.ctx.Forward(rec)
}

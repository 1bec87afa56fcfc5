package pipeline

import (
	"bytes"
	"fmt"
)

// ForeignKeyExtractor returns the foreign key of a left-table row (rec.Key, rec.Value); nil
// means the row has no foreign key.
type ForeignKeyExtractor func(rec Record) (any, error)

// JoinForeignKey joins this table with other through a foreign key extracted from this
// table's values (KTable#join/#leftJoin(KTable, Function | BiFunction, ValueJoiner), KIP-213,
// KIP-1104). The result is keyed by this table's key; the joiner gets this table's value as
// rec.Value and other's value (nil in a left join without a match) as its second argument.
//
// The topology is Kafka Streams 4.4's (KTableImpl#doJoinOnForeignKey), its two internal
// topics kept in memory as repartition topics are: this table's updates become
// subscriptions (the registration processor, SubscriptionSendProcessorSupplier), which the
// registration topic carries, keyed by foreign key, to the other table's partition of it;
// there the receive processor keeps them in the subscription store and the join-foreign
// processor answers them from the other table's rows, and an update of the other table
// answers every subscription to its key (foreign-join-subscription). The response topic
// carries the answers back to the row's partition, where the resolver joins them with the
// row, unless the row changed since (a hash of its value says so), and the result node keeps
// the result table. The registration topic is co-partitioned with the other table, the
// response topic with this one.
//
// Names, with a name n and as Kafka Streams 4.4 gives them (each takes an index):
// n-subscription-registration (the registration topic, with -topic), its processor, sink and
// source, the store n-subscription-store, n-subscription-receive, n-subscription-join-foreign,
// n-foreign-join-subscription, n-subscription-response (the response topic), its sink and
// source, n-subscription-response-resolver, n-result; unnamed they take the prefixes
// KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-, KTABLE-SINK-, KTABLE-SOURCE-,
// KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-, KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-,
// KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-, KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-
// and KTABLE-FK-JOIN-OUTPUT-, and the result's store, materialized when named or needed,
// KTABLE-FK-JOIN-OUTPUT-STATE-STORE-.
//
// tj's partitioners (TableJoined) choose the partition of a foreign key in the registration
// topic (OtherPartitioner) and of a result's key in the response topic (Partitioner). The
// foreign key is serialised with other's key serde as Kafka Streams does: for the
// subscription key under the pseudo-topic <application.id>-<registration topic>-fk (the
// primary key under -pk, the value hashed under -vh), for the default partition under the
// registration topic.
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
	// The other table's old values and store, and this table's old values, which the
	// subscriptions need to leave the foreign key a row no longer has.
	other.enableSendingOldValues()
	t.enableSendingOldValues()
	otherRows, err := other.getter()
	if err != nil {
		return nil, fmt.Errorf("%s: other side: %w", what, err)
	}
	thisRows, err := t.getter()
	if err != nil {
		return nil, fmt.Errorf("%s: this side: %w", what, err)
	}
	b := t.b
	named := func(prefix, suffix string) string {
		if name == "" {
			return b.newName(prefix, "")
		}
		return b.newName(prefix, name+suffix)
	}
	const (
		registration = "KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-"
		processor    = "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-"
	)
	spec := &fkJoinSpec{fk: fk, joiner: joiner, left: left, this: thisRows, other: otherRows,
		thisKeys: b.orDefaults(t.serdes).Key, thisValues: b.orDefaults(t.serdes).Value, otherKeys: b.orDefaults(other.serdes).Key,
		otherValues: b.orDefaults(other.serdes).Value,
		partitioner: tj.Partitioner, otherPartitioner: tj.OtherPartitioner}
	spec.registration = named(registration, "-subscription-registration") + "-topic"
	sendName := named(registration, "-subscription-registration-processor")
	regSinkName := named("KTABLE-SINK-", "-subscription-registration-sink")
	regSourceName := named("KTABLE-SOURCE-", "-subscription-registration-source")
	spec.subs = named("KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-", "-subscription-store")
	if _, dup := b.stores[spec.subs]; dup {
		return nil, fmt.Errorf("%s: store %q is already declared", what, spec.subs)
	}
	receiveName := named(processor, "-subscription-receive")
	joinForeignName := named(processor, "-subscription-join-foreign")
	foreignJoinName := named(processor, "-foreign-join-subscription")
	spec.response = named("KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-", "-subscription-response") + "-topic"
	respSinkName := named("KTABLE-SINK-", "-subscription-response-sink")
	respSourceName := named("KTABLE-SOURCE-", "-subscription-response-source")
	resolverName := named("KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-", "-subscription-response-resolver")
	outName := named("KTABLE-FK-JOIN-OUTPUT-", "-result")
	// The result's store name is taken now, as Kafka Streams' MaterializedInternal takes it,
	// and used if the result is materialized, now or when a downstream operator asks.
	storeName := m.StoreName
	if storeName == "" {
		storeName = b.newName("KTABLE-FK-JOIN-OUTPUT-STATE-STORE-", "")
	}
	if _, dup := b.stores[storeName]; dup && m.Given {
		return nil, fmt.Errorf("%s: store %q is already declared", what, storeName)
	}

	add := func(n *Node, parent *Node) (*Node, error) {
		n, err := b.addNode(n)
		if err != nil {
			return nil, err
		}
		parent.addChild(n)
		return n, nil
	}
	send, err := add(&Node{Name: sendName, Kind: ProcessorNode, factory: func() Processor { return &fkSend{spec: spec} }}, t.node)
	if err != nil {
		return nil, err
	}
	regSink := &sinkSpec{topic: spec.registration, route: spec.routeSubscription, decodeInternal: spec.decodeSubscription, encodeInternal: spec.encodeSubscription}
	if _, err := add(&Node{Name: regSinkName, Kind: SinkNode, Topic: spec.registration, Internal: true, sink: regSink}, send); err != nil {
		return nil, err
	}
	regSource, err := b.addNode(&Node{Name: regSourceName, Kind: SourceNode, Topics: []string{spec.registration}, Internal: true})
	if err != nil {
		return nil, err
	}
	regSink.repartitionTo = regSource
	b.stores[spec.subs] = &StoreSpec{Name: spec.subs, Type: TimestampedKeyValueStoreType, Headers: true,
		Serdes: Serdes{Key: rawBytesSerde{}, Value: rawBytesSerde{}}, Logged: true}
	receive, err := add(&Node{Name: receiveName, Kind: ProcessorNode, Stores: []string{spec.subs},
		factory: func() Processor { return &fkReceive{spec: spec} }}, regSource)
	if err != nil {
		return nil, err
	}
	joinForeign, err := add(&Node{Name: joinForeignName, Kind: ProcessorNode, Stores: otherRows.stores,
		factory: func() Processor { return &fkJoinForeign{spec: spec} }}, receive)
	if err != nil {
		return nil, err
	}
	foreignJoin, err := add(&Node{Name: foreignJoinName, Kind: ProcessorNode, Stores: []string{spec.subs},
		factory: func() Processor { return &fkForeignJoin{spec: spec} }}, other.node)
	if err != nil {
		return nil, err
	}
	respSinkSpec := &sinkSpec{topic: spec.response, route: spec.routeResponse, decodeInternal: spec.decodeResponse, encodeInternal: spec.encodeResponse}
	respSink, err := add(&Node{Name: respSinkName, Kind: SinkNode, Topic: spec.response, Internal: true, sink: respSinkSpec}, joinForeign)
	if err != nil {
		return nil, err
	}
	foreignJoin.addChild(respSink)
	respSource, err := b.addNode(&Node{Name: respSourceName, Kind: SourceNode, Topics: []string{spec.response}, Internal: true})
	if err != nil {
		return nil, err
	}
	respSinkSpec.repartitionTo = respSource
	b.copartition(other.node, regSource)
	b.copartition(t.node, respSource)
	resolver, err := add(&Node{Name: resolverName, Kind: ProcessorNode, Stores: thisRows.stores,
		factory: func() Processor { return &fkResolve{spec: spec} }}, respSource)
	if err != nil {
		return nil, err
	}
	ov := false
	out := &fkJoinOutSpec{versioned: m.Versioned}
	outNode, err := add(&Node{Name: outName, Kind: ProcessorNode, factory: func() Processor { return &fkJoinOutput{spec: out, oldValues: &ov} }}, resolver)
	if err != nil {
		return nil, err
	}

	serdes := Serdes{Key: orSerde(m.Serdes.Key, t.serdes.Key), Value: m.Serdes.Value}
	outNode.valueSerde = serdes.Value
	result := &KTable{b: b, node: outNode, serdes: serdes, oldValues: &ov, versioned: m.Versioned, source: true}
	// Like a source table, the result has a store when named, or once an operator needs
	// its old values.
	result.materialize = func() {
		if out.store != "" {
			return
		}
		out.store, result.store = storeName, storeName
		outNode.Stores = []string{storeName}
		st := m.kvStoreSpec(storeName, b.orDefaults(serdes))
		st.CachingDisabled = m.Versioned // versioned stores have no record cache
		b.stores[storeName] = st
	}
	if m.Given {
		result.materialize()
	}
	return result, nil
}

// TableJoined configures a foreign-key join (Kafka Streams' TableJoined): its name and the
// partitioners of this table's keys (the response topic's) and of foreign keys (the
// registration topic's); nil partitioners are the default. A partitioner must choose
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
	subs   string // the subscription store
	// this and other read the tables' rows (their value getters).
	this, other *tableGetter
	// thisKeys, thisValues and otherKeys are the tables' serdes; registration and response
	// are the names of the registration and response topics, without the application id.
	thisKeys, thisValues, otherKeys, otherValues Serde
	registration, response                       string
	partitioner, otherPartitioner                StreamPartitioner
}

// partition is where a key goes in one of the join's topics: the partitioner's single
// choice (FK joins need a singleton, as Kafka Streams says), else murmur2 of the key
// serialised for the topic.
func (s *fkJoinSpec) partition(ctx *Context, topicName string, partitioner StreamPartitioner, keys Serde, rec Record) (int32, error) {
	n := ctx.repartitionPartitions(topicName)
	topic := ctx.internalTopic(topicName)
	if partitioner != nil {
		r := rec
		r.Value = nil
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
	kb, err := keys.Serialize(topic, rec.Headers, rec.Key)
	if err != nil {
		return 0, fmt.Errorf("serialize key for %s: %w", topic, err)
	}
	return DefaultPartition(kb, n), nil
}

// routeSubscription is the registration topic's partition of a subscription: its foreign
// key's. A left join's subscription without a foreign key is answered without being kept or
// reading the other table, so any partition does (Kafka's producer picks one): the row's,
// within the topic's count.
func (s *fkJoinSpec) routeSubscription(ctx *Context, rec Record) (int32, error) {
	if rec.Key == nil {
		return rec.Partition % ctx.repartitionPartitions(s.registration), nil
	}
	return s.partition(ctx, s.registration, s.otherPartitioner, s.otherKeys, rec)
}

// routeResponse is the response topic's partition of an answer: the row's own
// (KAFKA-13769), unless a partitioner says.
func (s *fkJoinSpec) routeResponse(ctx *Context, rec Record) (int32, error) {
	if s.partitioner != nil {
		return s.partition(ctx, s.response, s.partitioner, s.thisKeys, rec)
	}
	return rec.Value.(*fkResponse).partition, nil
}

// primaryKeyBytes serialises a primary key for the subscription store (CombinedKeySchema).
func (s *fkJoinSpec) primaryKeyBytes(ctx *Context, headers Headers, pk any) ([]byte, error) {
	pb, err := s.thisKeys.Serialize(ctx.internalTopic(s.registration)+"-pk", headers, pk)
	if err != nil {
		return nil, fmt.Errorf("primary key: %w", err)
	}
	return pb, nil
}

// foreignKeyBytes serialises a foreign key for the subscription store (CombinedKeySchema)
// and to compare a row's old and new foreign keys.
func (s *fkJoinSpec) foreignKeyBytes(ctx *Context, headers Headers, fk any) ([]byte, error) {
	fb, err := s.otherKeys.Serialize(ctx.internalTopic(s.registration)+"-fk", headers, fk)
	if err != nil {
		return nil, fmt.Errorf("foreign key: %w", err)
	}
	return fb, nil
}

// valueHash is the hash of a row value that tells a current answer from a stale one: nil for
// no value.
func (s *fkJoinSpec) valueHash(ctx *Context, headers Headers, v any) (*[2]uint64, error) {
	if v == nil {
		return nil, nil
	}
	vb, err := s.thisValues.Serialize(ctx.internalTopic(s.registration)+"-vh", headers, v)
	if err != nil {
		return nil, fmt.Errorf("value hash: %w", err)
	}
	h := murmur3Hash128(vb)
	return &h, nil
}

// fkSend turns this table's updates into subscriptions, as Kafka Streams 4.4's
// SubscriptionSendProcessorSupplier instructs them.
type fkSend struct {
	ctx  *Context
	spec *fkJoinSpec
}

func (p *fkSend) Init(ctx *Context) error { p.ctx = ctx; return nil }

// foreignKey extracts a value's foreign key, nil when v or its key is nil.
func (p *fkSend) foreignKey(rec Record, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	rec.Value = v
	return p.spec.fk(rec)
}

func (p *fkSend) Process(rec Record) error {
	if rec.Key == nil {
		p.ctx.Drop(DropNullKey)
		return nil
	}
	c, _ := rec.Value.(Change)
	if c.OutOfOrder {
		p.ctx.Drop(DropOutOfOrder) // KIP-914
		return nil
	}
	oldFK, err := p.foreignKey(rec, c.Old)
	if err != nil {
		return err
	}
	newFK, err := p.foreignKey(rec, c.New)
	if err != nil {
		return err
	}
	// changed compares the keys serialised; a nil key serialises to nothing, which Kafka
	// Streams compares as unlike an empty one.
	changed := func() (bool, error) {
		if (oldFK == nil) != (newFK == nil) {
			return true, nil
		}
		ob, err := p.spec.foreignKeyBytes(p.ctx, rec.Headers, oldFK)
		if err != nil {
			return false, err
		}
		nb, err := p.spec.foreignKeyBytes(p.ctx, rec.Headers, newFK)
		return !bytes.Equal(ob, nb), err
	}
	hash, err := p.spec.valueHash(p.ctx, rec.Headers, c.New)
	if err != nil {
		return err
	}
	send := func(fk any, ins fkInstruction) error {
		out := rec
		out.Key = fk
		out.Value = &fkSubscription{hash: hash, ins: ins, pk: rec.Key, partition: rec.Partition}
		return p.ctx.Forward(out)
	}
	if p.spec.left {
		// KIP-962: a left join answers every update, even of a row without a foreign key;
		// the answer about the new foreign key replaces the result, so the old key's
		// subscription goes without an answer of its own.
		if c.Old == nil && c.New == nil {
			return nil
		}
		if oldFK != nil {
			ch, err := changed()
			if err != nil {
				return err
			}
			if ch {
				if err := send(oldFK, deleteNoPropagate); err != nil {
					return err
				}
			}
		}
		return send(newFK, propagateNullIfNoValue)
	}
	switch {
	case c.New == nil:
		if oldFK != nil {
			return send(oldFK, deleteAndPropagate)
		}
	case newFK == nil:
		p.ctx.Drop(DropNullForeignKey)
		if oldFK != nil {
			return send(oldFK, deleteAndPropagate)
		}
	case oldFK != nil:
		ch, err := changed()
		if err != nil {
			return err
		}
		if ch {
			// The old key's result goes unless the new key has a row.
			if err := send(oldFK, deleteNoPropagate); err != nil {
				return err
			}
			return send(newFK, propagateNullIfNoValue)
		}
		// The same foreign key: without a right row there was no result to take back.
		return send(newFK, propagateOnlyIfValue)
	default:
		return send(newFK, propagateOnlyIfValue)
	}
	return nil
}

// fkReceive keeps the subscriptions that reach the other table's partition of their
// foreign key in the subscription store (SubscriptionReceiveProcessorSupplier), as Kafka
// Streams 4.4 does: at the record's time, with its headers, keyed [FK][PK].
type fkReceive struct {
	ctx  *Context
	spec *fkJoinSpec
}

func (p *fkReceive) Init(ctx *Context) error { p.ctx = ctx; return nil }

func (p *fkReceive) Process(rec Record) error {
	if rec.Key == nil {
		// A left join's row without a foreign key: answered, not kept.
		return p.ctx.Forward(rec)
	}
	sub := rec.Value.(*fkSubscription)
	fb, err := p.spec.foreignKeyBytes(p.ctx, rec.Headers, rec.Key)
	if err != nil {
		return err
	}
	pb, err := p.spec.primaryKeyBytes(p.ctx, rec.Headers, sub.pk)
	if err != nil {
		return err
	}
	subs, err := p.ctx.store(p.spec.subs, rec.Partition)
	if err != nil {
		return err
	}
	var value []byte
	if sub.ins != deleteNoPropagate && sub.ins != deleteAndPropagate {
		value = appendSubscription(nil, sub, pb)
	}
	if err := subs.bytes.Put(subscriptionKey(fb, pb), value, rec.Timestamp, rec.Headers); err != nil {
		return err
	}
	return p.ctx.Forward(rec)
}

// fkJoinForeign answers a subscription from the other table's row of its foreign key
// (SubscriptionJoinProcessorSupplier): at max(subscription, row) time when the row exists.
type fkJoinForeign struct {
	ctx  *Context
	spec *fkJoinSpec
}

func (p *fkJoinForeign) Init(ctx *Context) error { p.ctx = ctx; return nil }

func (p *fkJoinForeign) Process(rec Record) error {
	sub := rec.Value.(*fkSubscription)
	var foreign any
	found := false
	ts := rec.Timestamp
	if rec.Key != nil {
		v, vts, ok, err := p.spec.other.get(p.ctx, rec, rec.Key)
		if err != nil {
			return err
		}
		if ok {
			foreign, found, ts = v, true, max(ts, vts)
		}
	}
	switch sub.ins {
	case deleteNoPropagate:
		return nil
	case deleteAndPropagate:
		foreign = nil
	case propagateOnlyIfValue:
		if !found {
			return nil
		}
	}
	out := rec
	out.Key, out.Timestamp = sub.pk, ts
	out.Value = &fkResponse{hash: sub.hash, foreign: foreign, partition: sub.partition}
	return p.ctx.Forward(out)
}

// fkForeignJoin answers every subscription to a key of the other table when the key's row
// changes (ForeignTableJoinProcessorSupplier), at the update's time.
type fkForeignJoin struct {
	ctx  *Context
	spec *fkJoinSpec
}

func (p *fkForeignJoin) Init(ctx *Context) error { p.ctx = ctx; return nil }

func (p *fkForeignJoin) Process(rec Record) error {
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
	fb, err := p.spec.foreignKeyBytes(p.ctx, rec.Headers, rec.Key)
	if err != nil {
		return err
	}
	prefix := subscriptionPrefix(fb)
	type subscriber struct {
		pk   []byte
		hash *[2]uint64
		part int32
	}
	// Read them all before answering: the answers write other stores.
	var found []subscriber
	it := subs.bytes.PrefixScan(prefix)
	for it.Next() {
		hash, part, err := parseSubscription(it.Value())
		if err != nil {
			it.Close()
			return fmt.Errorf("subscription store %s: %w", p.spec.subs, err)
		}
		found = append(found, subscriber{pk: bytes.Clone(it.Key()[len(prefix):]), hash: hash, part: part})
	}
	err = it.Err()
	it.Close()
	if err != nil {
		return err
	}
	for _, s := range found {
		pk, err := p.spec.thisKeys.Deserialize(p.ctx.internalTopic(p.spec.registration)+"-pk", rec.Headers, s.pk)
		if err != nil {
			return fmt.Errorf("primary key: %w", err)
		}
		out := rec
		out.Key = pk
		out.Value = &fkResponse{hash: s.hash, foreign: c.New, partition: s.part}
		if err := p.ctx.Forward(out); err != nil {
			return err
		}
	}
	return nil
}

// fkResolve joins an answer with the row it answers, in the row's partition
// (ResponseJoinProcessorSupplier): an answer about a value the row no longer has is dropped
// (counted, reason stale); a missing other value tombstones an inner join's result and a
// deleted row's.
type fkResolve struct {
	ctx  *Context
	spec *fkJoinSpec
}

func (p *fkResolve) Init(ctx *Context) error { p.ctx = ctx; return nil }

func (p *fkResolve) Process(rec Record) error {
	resp := rec.Value.(*fkResponse)
	current, _, found, err := p.spec.this.get(p.ctx, rec, rec.Key)
	if err != nil {
		return err
	}
	if !found {
		current = nil
	}
	hash, err := p.spec.valueHash(p.ctx, rec.Headers, current)
	if err != nil {
		return err
	}
	if !sameHash(hash, resp.hash) {
		p.ctx.Drop(DropStale)
		return nil
	}
	var out any
	if resp.foreign != nil || (p.spec.left && current != nil) {
		r := rec
		r.Value = current
		if out, err = p.spec.joiner(r, resp.foreign); err != nil {
			return err
		}
	}
	rec.Value = Change{New: out}
	return p.ctx.Forward(rec)
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

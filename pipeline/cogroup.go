package pipeline

import "fmt"

// CogroupedKStream aggregates several grouped streams into one table through one shared
// store, each input with its own aggregator (Kafka Streams' CogroupedKStream).
type CogroupedKStream struct {
	b      *StreamsBuilder
	inputs []cogroupInput
}

type cogroupInput struct {
	g   *KGroupedStream
	agg Aggregator
}

// Cogroup starts a cogrouped aggregation with this grouped stream and its aggregator.
func (g *KGroupedStream) Cogroup(agg Aggregator) (*CogroupedKStream, error) {
	c := &CogroupedKStream{b: g.s.b}
	return c.Cogroup(g, agg)
}

// Cogroup adds a grouped stream with its aggregator. Adding a grouped stream that is already
// an input replaces its aggregator and keeps its place, as Kafka Streams' map of inputs does.
func (c *CogroupedKStream) Cogroup(g *KGroupedStream, agg Aggregator) (*CogroupedKStream, error) {
	if g == nil || agg == nil {
		return nil, fmt.Errorf("cogroup needs a grouped stream and an aggregator")
	}
	if g.s.b != c.b {
		return nil, fmt.Errorf("cogroup: the grouped stream belongs to another StreamsBuilder")
	}
	for i := range c.inputs {
		if c.inputs[i].g == g {
			c.inputs[i].agg = agg
			return c, nil
		}
	}
	c.inputs = append(c.inputs, cogroupInput{g: g, agg: agg})
	return c, nil
}

// Aggregate builds the aggregation, taking names in Kafka Streams' order
// (CogroupedStreamAggregateBuilder): the store, the repartition nodes of every input whose
// key changed, one COGROUPKSTREAM-AGGREGATE processor per input, all sharing the store, and
// a COGROUPKSTREAM-MERGE processor that the table hangs from. A user name becomes
// <name>-cogroup-agg-<i> and <name>-cogroup-merge, still consuming the indices.
func (c *CogroupedKStream) Aggregate(init Initializer, m Materialized, name string) (*KTable, error) {
	if init == nil {
		return nil, fmt.Errorf("cogroup aggregate needs an initializer")
	}
	return c.aggregate(m, name, func(storeName string, serdes Serdes) (*StoreSpec, error) {
		return m.kvStoreSpec(storeName, serdes), nil
	}, func(storeName string, agg Aggregator, ov *bool) Processor {
		return &streamAggregate{store: storeName, init: init, agg: agg, oldValues: ov}
	})
}

// WindowedCogroupedKStream is a cogrouped stream with windows (Kafka Streams'
// TimeWindowedCogroupedKStream and SessionWindowedCogroupedKStream): each input runs its own
// windowed aggregation processor, with its own stream time, on the one shared store.
type WindowedCogroupedKStream struct {
	c       *CogroupedKStream
	time    *TimeWindows
	sliding *SlidingWindows
	session *SessionWindows
}

// WindowedBy adds time windows to the cogrouping.
func (c *CogroupedKStream) WindowedBy(w TimeWindows) (*WindowedCogroupedKStream, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return &WindowedCogroupedKStream{c: c, time: &w}, nil
}

// WindowedBySliding adds sliding windows to the cogrouping.
func (c *CogroupedKStream) WindowedBySliding(w SlidingWindows) (*WindowedCogroupedKStream, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return &WindowedCogroupedKStream{c: c, sliding: &w}, nil
}

// WindowedBySession adds session windows to the cogrouping; Aggregate then needs a merger.
func (c *CogroupedKStream) WindowedBySession(w SessionWindows) (*WindowedCogroupedKStream, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return &WindowedCogroupedKStream{c: c, session: &w}, nil
}

// Sessions reports whether the windows are session windows, whose aggregate takes a merger.
func (w *WindowedCogroupedKStream) Sessions() bool { return w.session != nil }

// Aggregate builds the windowed aggregation as Aggregate does, with each input's records
// windowed by the windows' rules and the result keyed by windowed keys; merge combines two
// sessions' aggregates (session windows only). Updates are emitted on every window update,
// the only strategy Kafka Streams gives cogroups.
func (w *WindowedCogroupedKStream) Aggregate(init Initializer, merge Merger, m Materialized, name string) (*KTable, error) {
	if init == nil {
		return nil, fmt.Errorf("cogroup aggregate needs an initializer")
	}
	if (merge != nil) != (w.session != nil) {
		return nil, fmt.Errorf("a session-windowed cogroup aggregate needs a session merger, and only it takes one")
	}
	spec := func(storeName string, serdes Serdes) (*StoreSpec, error) {
		s := &StoreSpec{Name: storeName, Type: TimestampedWindowStoreType, Serdes: serdes, Logged: !m.LoggingDisabled, TopicConfig: m.TopicConfig, CachingDisabled: m.CachingDisabled}
		var err error
		switch {
		case w.time != nil:
			s.WindowSize = w.time.Size
			s.Retention, err = m.timeRetention(storeName, *w.time)
		case w.sliding != nil:
			s.WindowSize = w.sliding.TimeDifference
			s.Retention, err = m.slidingRetention(storeName, *w.sliding)
		default:
			s.Type = SessionStoreType
			s.Retention, err = m.sessionRetention(storeName, *w.session)
		}
		return s, err
	}
	table, err := w.c.aggregate(m, name, spec, func(storeName string, agg Aggregator, ov *bool) Processor {
		switch {
		case w.time != nil:
			return &windowAggregate{store: storeName, windows: *w.time, init: init, agg: agg, oldValues: ov}
		case w.sliding != nil:
			return &slidingAggregate{store: storeName, windows: *w.sliding, init: init, agg: agg, oldValues: ov}
		}
		return &sessionAggregate{store: storeName, windows: *w.session, init: init, agg: agg, merge: merge, oldValues: ov}
	})
	if err != nil {
		return nil, err
	}
	switch {
	case w.time != nil:
		table.serdes.Key = TimeWindowedSerde{Inner: table.serdes.Key, Size: w.time.Size}
	case w.sliding != nil:
		table.serdes.Key = TimeWindowedSerde{Inner: table.serdes.Key, Size: w.sliding.TimeDifference}
	default:
		table.serdes.Key = SessionWindowedSerde{Inner: table.serdes.Key}
	}
	return table, nil
}

// aggregate adds the store spec makes and one processor proc makes per input.
func (c *CogroupedKStream) aggregate(m Materialized, name string, spec func(storeName string, serdes Serdes) (*StoreSpec, error),
	proc func(storeName string, agg Aggregator, oldValues *bool) Processor) (*KTable, error) {
	b := c.b
	if err := m.checkVersioned("a cogroup aggregation"); err != nil {
		return nil, err
	}
	storeName := m.StoreName
	if storeName == "" {
		storeName = b.newName("COGROUPKSTREAM-AGGREGATE-STATE-STORE-", "")
	}
	if _, dup := b.stores[storeName]; dup {
		return nil, fmt.Errorf("store %q is already declared", storeName)
	}
	parents := make([]*Node, len(c.inputs))
	for i, in := range c.inputs {
		parents[i] = in.g.s.node
		if !in.g.repartitionRequired {
			continue
		}
		prefix := in.g.grouped.Name
		if prefix == "" {
			prefix = storeName
		}
		serdes := b.orDefaults(Serdes{
			Key:   orSerde(in.g.grouped.Serdes.Key, in.g.s.serdes.Key),
			Value: orSerde(in.g.grouped.Serdes.Value, in.g.s.serdes.Value),
		})
		src, err := b.addRepartition(in.g.s.node, prefix, serdes, 0, nil)
		if err != nil {
			return nil, fmt.Errorf("cogroup input %d: %w", i+1, err)
		}
		parents[i] = src
	}
	ov := false
	aggs := make([]*Node, len(c.inputs))
	for i, in := range c.inputs {
		procName := b.newName("COGROUPKSTREAM-AGGREGATE-", suffixed(name, fmt.Sprintf("-cogroup-agg-%d", i)))
		n, err := b.addNode(&Node{Name: procName, Kind: ProcessorNode, Stores: []string{storeName}})
		if err != nil {
			return nil, err
		}
		agg := in.agg
		n.factory = func() Processor { return proc(storeName, agg, &ov) }
		parents[i].addChild(n)
		aggs[i] = n
	}
	merge, err := b.addNode(&Node{
		Name: b.newName("COGROUPKSTREAM-MERGE-", suffixed(name, "-cogroup-merge")), Kind: ProcessorNode,
		factory: func() Processor { return &passThrough{} },
	})
	if err != nil {
		return nil, err
	}
	for _, n := range aggs {
		n.addChild(merge)
	}
	b.copartition(parents...)
	serdes := b.orDefaults(m.Serdes)
	st, err := spec(storeName, serdes)
	if err != nil {
		return nil, err
	}
	if err := m.checkStoreKind("a windowed cogroup aggregation", st); err != nil {
		return nil, err
	}
	b.stores[storeName] = st
	merge.valueSerde = serdes.Value
	return &KTable{b: b, node: merge, serdes: serdes, store: storeName, oldValues: &ov, versioned: m.Versioned}, nil
}

// suffixed is a user name with a suffix, or "" (a generated name) when there is none.
func suffixed(name, suffix string) string {
	if name == "" {
		return ""
	}
	return name + suffix
}

package pipeline

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// RecordCollector receives what sinks write. The agent implements it with a Kafka producer,
// the test driver with in-memory topics.
type RecordCollector interface {
	// Send writes one record. source is the input record being processed when the record
	// was produced (nil outside Process: punctuators, cache flushes at a commit), as Kafka
	// Streams' RecordCollector.send gets the processor context; the record and source
	// stay unchanged until the collector is done with them.
	Send(topic string, partition int32, key, value []byte, headers Headers, timestampMs int64, source *SourceRecord) error
	// PartitionsFor returns the partition count of a topic.
	PartitionsFor(topic string) (int32, error)
}

// Counter is the part of a metric counter the engine uses.
type Counter interface{ Inc() }

// Sensors hands out the counters the engine increments. Counters are fetched once per node
// at build time, never per record.
type Sensors interface {
	Processed(node string) Counter
	// Dropped counts the records a node dropped for a reason.
	Dropped(node string, reason DropReason) Counter
	// EndToEnd observes, at a source or terminal node, the seconds from a record's
	// timestamp to the moment it enters or leaves the topology (Kafka Streams'
	// record-e2e-latency).
	EndToEnd(node string) Observer
	// Punctuation observes the seconds each punctuation of a node's punctuators takes.
	Punctuation(node string) Observer
	// StoreLatency observes the seconds a sample of a store's operations take; op is one
	// of StoreOpPut, StoreOpGet, StoreOpRange.
	StoreLatency(store, op string) Observer
}

// Observer is the part of a histogram the engine uses.
type Observer interface{ Observe(float64) }

// TopologyOptions are what a built topology needs from whoever runs it.
type TopologyOptions struct {
	Collector RecordCollector
	Sensors   Sensors // nil: nothing is counted
	Clock     func() int64
	// SourcePartitions is the partition count of each source topic.
	SourcePartitions map[string]int32
	// Stores opens state store partitions; needed when the topology has stores.
	Stores StoreProvider
	// ApplicationID names changelog topics (<application.id>-<store>-changelog).
	ApplicationID string
	// CacheMaxBytes is the record cache budget (statestore.cache.max.bytes); 0 disables it.
	CacheMaxBytes int64
}

// Topology is the runtime form of a built graph: processors wired to their children.
type Topology struct {
	sources        map[string]*runtimeNode
	patternSources []patternSource
	globalStores   map[string]bool
	// versionedKV are the key-value views of versioned stores that aggregations keep.
	versionedKV         map[storeKey]*KeyValueStore
	nodes               []*runtimeNode
	collector           RecordCollector
	sensors             Sensors
	clock               func() int64
	maxSourcePartitions int32
	// repartitionPartitions is the partition count of each repartition topic.
	repartitionPartitions map[string]int32
	// internal are the internal topics by name (without the application id), in the order
	// of internalOrder (internal.go).
	internal      map[string]*internalSource
	internalOrder []string
	// internalTasks is the task count of each sub-topology that reads repartition topics.
	internalTasks map[int]int32

	storeSpecs    map[string]*StoreSpec
	storeProvider StoreProvider
	openStores    map[storeKey]any // *KeyValueStore, *WindowStore, ...
	appID         string
	nodeStores    map[string][]string
	subtopologyOf map[string]int
	streamTime    map[int32]*int64 // task stream time by partition
	punctuators   []*punctuator
	// cancelledPunctuators counts the cancelled punctuators still in punctuators.
	cancelledPunctuators int

	partTime map[TopicPartition]*int64 // stream time of each source partition
	// last is what the previous record's topic and partition resolved to.
	last     lastInput
	assigned map[TopicPartition]bool // nil: every partition seen
	// unstarted are the partitions SetAssignment named whose tasks have not started yet.
	unstarted   []TopicPartition
	idle        map[TopicPartition]bool
	idleAll     bool // the test driver: no lag, every partition is idle
	watermark   int64
	wmListeners []func(wm int64) error
	// commitListeners write processors' in-memory state at the commit barrier.
	commitListeners []func() error

	cacheMaxBytes int64
	caches        []*recordCache
	cacheOf       map[string]*recordCache // by store

	// current is the node whose Process runs, nil between records.
	current *runtimeNode
	// input is the record Process runs through the topology; nil outside Process.
	input *SourceRecord
}

type storeKey struct {
	name      string
	partition int32
}

type runtimeNode struct {
	name      string
	proc      Processor
	children  []*runtimeNode
	processed Counter
	ctx       *Context
	tap       TapFunc // nil unless someone watches what the node emits
	// valueSerde is the serde the node's values are known to be written with (ValueSerde).
	valueSerde Serde
	// drops are the node's dropped-records counters, each fetched at its first drop.
	drops [numDropReasons]Counter
}

// NodeError says which processor failed.
type NodeError struct {
	Node string
	Err  error
}

func (e *NodeError) Error() string { return fmt.Sprintf("processor %s: %v", e.Node, e.Err) }
func (e *NodeError) Unwrap() error { return e.Err }

func (n *runtimeNode) process(rec Record) error {
	n.processed.Inc()
	t := n.ctx.topology
	outer := t.current
	t.current = n
	err := n.proc.Process(rec)
	t.current = outer
	if err != nil {
		var ne *NodeError
		if errors.As(err, &ne) {
			return err
		}
		return &NodeError{Node: n.name, Err: err}
	}
	return nil
}

// Build turns the graph into a runnable topology and initialises every processor.
func (b *StreamsBuilder) Build(opts TopologyOptions) (*Topology, error) {
	if len(b.sourceTopics) == 0 && len(b.patternSources) == 0 {
		return nil, errors.New("the topology has no source: call stream(...) on the builder")
	}
	t := &Topology{
		sources:       map[string]*runtimeNode{},
		collector:     opts.Collector,
		sensors:       opts.Sensors,
		clock:         opts.Clock,
		storeSpecs:    b.stores,
		storeProvider: opts.Stores,
		openStores:    map[storeKey]any{},
		appID:         opts.ApplicationID,
		nodeStores:    map[string][]string{},
		subtopologyOf: map[string]int{},
		streamTime:    map[int32]*int64{},
		partTime:      map[TopicPartition]*int64{},
		idle:          map[TopicPartition]bool{},
		watermark:     -1,
		cacheMaxBytes: opts.CacheMaxBytes,
		cacheOf:       map[string]*recordCache{},
	}
	t.globalStores, t.versionedKV = map[string]bool{}, map[storeKey]*KeyValueStore{}
	for _, g := range b.GlobalStores() {
		t.globalStores[g.Store] = true
	}
	if len(b.stores) > 0 && opts.Stores == nil {
		return nil, errors.New("the topology has state stores but no store provider was given")
	}
	for id, group := range b.subtopologies() {
		for _, n := range group {
			t.subtopologyOf[n.Name] = id
			if len(n.Stores) > 0 {
				t.nodeStores[n.Name] = n.Stores
			}
		}
	}
	if t.sensors == nil {
		t.sensors = noSensors{}
	}
	if t.clock == nil {
		t.clock = func() int64 { return time.Now().UnixMilli() }
	}
	for _, p := range opts.SourcePartitions {
		t.maxSourcePartitions = max(t.maxSourcePartitions, p)
	}
	var err error
	if t.repartitionPartitions, err = b.repartitionCounts(opts.SourcePartitions, t.maxSourcePartitions); err != nil {
		return nil, err
	}
	t.internalTasks = map[int]int32{}
	for _, n := range b.nodes {
		if n.Kind == SourceNode && n.Internal {
			s := t.subtopologyOf[n.Name]
			t.internalTasks[s] = max(t.internalTasks[s], t.repartitionPartitions[n.Topics[0]])
		}
	}
	relaxed := map[*Node]bool{}
	byNode := map[*Node]*runtimeNode{}
	for _, n := range b.nodes {
		rn := &runtimeNode{name: n.Name, processed: t.sensors.Processed(n.Name), valueSerde: n.valueSerde}
		switch n.Kind {
		case SourceNode:
			if n.Internal {
				rn.proc = &passThrough{}
			} else {
				rn.proc = &sourceProc{spec: n.source}
			}
		case SinkNode:
			rn.valueSerde = n.sink.serdes.Value
			if n.sink.repartitionTo != nil {
				rn.proc = &repartitionSink{spec: n.sink}
			} else {
				rn.proc = &sinkProc{spec: n.sink}
			}
		default:
			if n.repartitionFilter {
				rn.proc = &nullKeyFilter{keepNull: relaxedDownstream(n, relaxed)}
			} else {
				rn.proc = n.factory()
			}
		}
		byNode[n] = rn
		t.nodes = append(t.nodes, rn)
	}
	for _, n := range b.nodes {
		rn := byNode[n]
		for _, c := range n.Children {
			rn.children = append(rn.children, byNode[c])
		}
		if rs, ok := rn.proc.(*repartitionSink); ok {
			rs.target = byNode[n.sink.repartitionTo]
			t.addInternal(n.sink, rs.target)
		}
		if n.Kind == SourceNode && !n.Internal {
			for _, topic := range n.Topics {
				t.sources[topic] = rn
			}
			if n.source.pattern != nil {
				t.patternSources = append(t.patternSources, patternSource{n.source.pattern, rn})
			}
		}
	}
	for _, rn := range t.nodes {
		rn.ctx = &Context{node: rn, topology: t}
		if err := rn.proc.Init(rn.ctx); err != nil {
			return nil, &NodeError{Node: rn.name, Err: err}
		}
	}
	t.shareCaches()
	return t, nil
}

// SourceRecord is a record as it arrives from a source topic, still in bytes: what the
// agent's consumer hands over. Key and Value are nil for a null key or value.
type SourceRecord struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp int64 // milliseconds since the epoch
	Key       []byte
	Value     []byte
	Headers   Headers
}

// RecordError says which input record failed, as topic-partition@offset.
type RecordError struct {
	Topic     string
	Partition int32
	Offset    int64
	Err       error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("%s-%d@%d: %v", e.Topic, e.Partition, e.Offset, e.Err)
}
func (e *RecordError) Unwrap() error { return e.Err }

// Process runs one source record through the topology. What sinks send meanwhile names it
// as their source (RecordCollector.Send), so in must stay unchanged until the collector is
// done with those records.
func (t *Topology) Process(in *SourceRecord) error {
	if t.unstarted != nil {
		if err := t.startAssigned(); err != nil {
			return &RecordError{Topic: in.Topic, Partition: in.Partition, Offset: in.Offset, Err: err}
		}
	}
	t.input = in
	err := t.process(in)
	t.input = nil
	return err
}

// lastInput is the source node and time slots of the previous record's topic and partition: a
// consumer hands out a partition's records in runs, so most records skip the map look-ups
// (one by topic name, two by partition). The slots are nil until the partition's first kept
// record, as the maps hold no entry until then.
type lastInput struct {
	topic                string
	partition            int32
	src                  *runtimeNode
	streamTime, partTime *int64
}

func (t *Topology) process(in *SourceRecord) error {
	last := &t.last
	if last.src == nil || last.partition != in.Partition || last.topic != in.Topic {
		src, ok := t.sources[in.Topic]
		if !ok {
			src, ok = t.matchPattern(in.Topic)
		}
		if !ok {
			return &RecordError{Topic: in.Topic, Partition: in.Partition, Offset: in.Offset,
				Err: errors.New("no source in this topology reads this topic")}
		}
		*last = lastInput{topic: in.Topic, partition: in.Partition, src: src,
			streamTime: t.streamTime[in.Partition], partTime: t.partTime[TopicPartition{Topic: in.Topic, Partition: in.Partition}]}
	}
	src := last.src
	sp := src.proc.(*sourceProc)
	rec, keep, err := sp.decode(src.ctx, *in)
	if err == nil && keep {
		st, pt := last.streamTime, last.partTime
		if st == nil {
			st = t.timeSlot(in.Partition)
			last.streamTime = st
		}
		if pt == nil {
			pt = new(int64)
			*pt = rec.Timestamp
			t.partTime[TopicPartition{Topic: in.Topic, Partition: in.Partition}] = pt
			last.partTime = pt
		}
		*st = max(*st, rec.Timestamp)
		*pt = max(*pt, rec.Timestamp)
		err = src.process(rec)
		if err == nil {
			err = t.punctuateStreamTime(in.Partition, *st)
		}
		if err == nil && len(t.wmListeners) > 0 {
			err = t.AdvanceWatermark()
		}
	}
	if err != nil {
		return &RecordError{Topic: in.Topic, Partition: in.Partition, Offset: in.Offset, Err: err}
	}
	return nil
}

// timeSlot is the stream time slot of a task partition, made on its first kept record (at
// math.MinInt64, below every timestamp, so the record's becomes the stream time).
func (t *Topology) timeSlot(partition int32) *int64 {
	st := t.streamTime[partition]
	if st == nil {
		st = new(int64)
		*st = math.MinInt64
		t.streamTime[partition] = st
	}
	return st
}

func (t *Topology) streamTimeOf(partition int32) int64 {
	if st := t.streamTime[partition]; st != nil {
		return *st
	}
	return -1
}

// partitionTime is the stream time of a source partition; seen is false before its first
// kept record.
func (t *Topology) partitionTime(tp TopicPartition) (st int64, seen bool) {
	if p := t.partTime[tp]; p != nil {
		return *p, true
	}
	return 0, false
}

func (t *Topology) punctuateStreamTime(partition int32, now int64) error {
	return t.punctuate(StreamTime, partition, now)
}

// HasWallClockPunctuators reports whether any processor scheduled a wall-clock punctuator,
// or assigned tasks have not started yet (their processors may schedule one when they do:
// PunctuateWallClock starts them).
func (t *Topology) HasWallClockPunctuators() bool {
	if t.unstarted != nil {
		return true
	}
	for _, p := range t.punctuators {
		if p.typ == WallClockTime && !p.cancelled {
			return true
		}
	}
	return false
}

// PunctuateWallClock starts the assigned tasks not started yet, then runs the wall-clock
// punctuators that are due.
func (t *Topology) PunctuateWallClock() error {
	if t.unstarted != nil {
		if err := t.startAssigned(); err != nil {
			return err
		}
	}
	if len(t.punctuators) == 0 {
		return nil
	}
	return t.punctuate(WallClockTime, -1, t.clock())
}

// punctuate fires the punctuators of typ due at now (stream-time ones of the task
// partition only) as Kafka Streams' PunctuationQueue does: the earliest due first, ties in
// the order they were scheduled; each once, after which its next time is past now; one
// that a punctuator cancels before its turn does not fire. One that a punctuator schedules
// waits for the next round, where Kafka Streams fires a due one in the same round: a
// punctuator that schedules another each time would never end the round.
func (t *Topology) punctuate(typ PunctuationType, partition int32, now int64) error {
	if t.cancelledPunctuators > 0 {
		t.punctuators = slices.DeleteFunc(t.punctuators, func(p *punctuator) bool { return p.cancelled })
		t.cancelledPunctuators = 0
	}
	// Punctuators only join the end of the list during the round.
	round := t.punctuators
	for {
		var first *punctuator
		for _, p := range round {
			if p.typ != typ || p.cancelled || p.next > now || (typ == StreamTime && p.ctx.partition != partition) {
				continue
			}
			if first == nil || p.next < first.next {
				first = p
			}
		}
		if first == nil {
			return nil
		}
		if err := first.fire(now); err != nil {
			return err
		}
	}
}

// ChangelogTopic is the changelog topic of a store: <application.id>-<store>-changelog.
func ChangelogTopic(appID, store string) string { return appID + "-" + store + "-changelog" }

// openStore returns (opening on first use) one partition of a declared store; open makes
// the typed store, or says the store is of another kind.
func openStore[S any](t *Topology, name string, partition int32, kind string, open func(spec *StoreSpec, topic string) (S, error)) (S, error) {
	var zero S
	k := storeKey{name, partition}
	if s, ok := t.openStores[k]; ok {
		if typed, ok := s.(S); ok {
			return typed, nil
		}
		return zero, errWrongStoreType(t.storeSpecs[name], kind)
	}
	spec, ok := t.storeSpecs[name]
	if !ok {
		return zero, fmt.Errorf("no state store named %q in this topology", name)
	}
	s, err := open(spec, ChangelogTopic(t.appID, name))
	if err != nil {
		return zero, fmt.Errorf("open store %s partition %d: %w", name, partition, err)
	}
	t.openStores[k] = s
	return s, nil
}

func errWrongStoreType(spec *StoreSpec, want string) error {
	return fmt.Errorf("state store %s is a %v store, not a %s store", spec.Name, spec.Type, want)
}

// Store returns one partition of a declared key-value store, for queries and tests.
func (t *Topology) Store(name string, partition int32) (*KeyValueStore, error) {
	return openStore(t, name, partition, "key-value", func(spec *StoreSpec, topic string) (*KeyValueStore, error) {
		if spec.Type != KeyValueStoreType && spec.Type != TimestampedKeyValueStoreType {
			return nil, errWrongStoreType(spec, "key-value")
		}
		b, err := t.storeProvider.KeyValueStore(*spec, partition)
		if err != nil {
			return nil, err
		}
		return &KeyValueStore{storeCodec: t.storeCodec(spec, topic), bytes: b}, nil
	})
}

// StoreType is the type of a declared store.
func (t *Topology) StoreType(name string) (StoreType, error) {
	spec, ok := t.storeSpecs[name]
	if !ok {
		return 0, fmt.Errorf("no state store named %q in this topology", name)
	}
	return spec.Type, nil
}

type noSensors struct{}

func (noSensors) Processed(string) Counter             { return nopCounter{} }
func (noSensors) Dropped(string, DropReason) Counter   { return nopCounter{} }
func (noSensors) EndToEnd(string) Observer             { return nopObserver{} }
func (noSensors) Punctuation(string) Observer          { return nopObserver{} }
func (noSensors) StoreLatency(string, string) Observer { return nopObserver{} }

type nopObserver struct{}

func (nopObserver) Observe(float64) {}

type nopCounter struct{}

func (nopCounter) Inc() {}

package pipeline

import (
	"errors"
	"fmt"
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
	// TaskProcessed counts the records a task processed (Kafka Streams' task-level
	// process-total), by task id.
	TaskProcessed(task string) Counter
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

	// The rest is for the topologies that run the tasks of one application together (the
	// agent's workers); a topology built without them runs every task, each made when a
	// record or a store read first needs it (the test driver, `stoatflow test`).

	// ExplicitTasks makes the topology run only the tasks given to AddTask.
	ExplicitTasks bool
	// Time is the application's time, shared by its topologies; nil: the topology's own.
	Time *GlobalTime
	// Router takes the re-keyed records for tasks the topology does not run.
	Router Router
	// SkipGlobalStores leaves the global stores to another topology of the application,
	// which keeps them; this one only reads them.
	SkipGlobalStores bool
	// RepartitionTopics writes the re-keyed records to their internal topics (repartition
	// topics, a foreign-key join's registration and response topics), named and encoded as
	// Kafka Streams writes them, through the Collector, instead of routing them in memory:
	// the agents of a streams group, which run only some of an application's tasks, do so.
	// Whoever runs the topology reads those topics and hands their records to
	// ProcessInternal. A topology with an internal topic it cannot write fails to build.
	RepartitionTopics bool
	// TaskTime closes windows on each task's own time, Kafka Streams' rule, instead of on
	// the global watermark (DESIGN.md §5): every windowed aggregation, suppress and
	// stream-stream join emits its final results on its own stream time in its task (the
	// largest timestamp of the records that reached it, re-keyed ones included, as lateness
	// is judged), after each record, and nothing waits for the watermark. The agents of a
	// streams group, each of which sees only its tasks' partitions, run so.
	TaskTime bool
}

// Router carries re-keyed records to the topologies that run their tasks: what Kafka
// Streams' repartition topics do between its tasks, in memory.
type Router interface {
	// Route takes a record for a task the topology does not run. The records of one task
	// must reach it in the order Route took them.
	Route(r Rekeyed) error
	// Flush hands on what Route took. The topology calls it once the records it was
	// processing are done, before it publishes their partitions' times, and before its
	// watermark moves.
	Flush()
}

// Rekeyed is a record on its way through a repartition topic to the task that reads it.
type Rekeyed struct {
	Task   TaskID
	Topic  string // the repartition topic
	Record Record
	// Origin is the consumed record it comes from (nil: a punctuator or a cache flush sent
	// it): what its errors and its outputs' failures name, as for the consumed record.
	Origin *SourceRecord
}

// Topology is the runtime form of a built graph: the tasks of the application it runs, each
// with its processors wired to their children. It is not safe for concurrent use: one
// goroutine (a worker) runs all of it; topologies share only their GlobalTime and what their
// Router carries.
type Topology struct {
	b *StreamsBuilder
	// groups are the nodes of each sub-topology, by id; global marks the global stores'
	// sub-topologies.
	groups        [][]*Node
	global        map[int]bool
	subtopologyOf map[string]int
	// sourceSub is the sub-topology reading each named source topic and repartition topic;
	// patternSubs those of the pattern sources.
	sourceSub    map[string]int
	patternSubs  []patternSub
	storeSub     map[string]int // the sub-topology whose tasks own a store's partitions
	globalStores map[string]bool
	nodeStores   map[string][]string
	storeSpecs   map[string]*StoreSpec

	collector           RecordCollector
	sensors             Sensors
	clock               func() int64
	storeProvider       StoreProvider
	appID               string
	sourcePartitions    map[string]int32
	maxSourcePartitions int32
	// repartitionPartitions is the partition count of each repartition topic.
	repartitionPartitions map[string]int32
	// internal are the internal topics by name (without the application id), in the order
	// of internalOrder (internal.go); throughTopics: the repartition sinks write them.
	internal      map[string]*internalSource
	internalOrder []string
	throughTopics bool
	// taskTime: windows close on their tasks' own time (TopologyOptions.TaskTime).
	taskTime bool

	tasks      map[TaskID]*Task
	order      []*Task // the tasks in id order, the global task first
	explicit   bool
	skipGlobal bool
	// shared are the partitions of the stores no task owns: the global stores, and stores
	// declared but connected to no processor.
	shared map[storeKey]any
	taps   map[string]TapFunc

	router Router
	time   *GlobalTime
	// pending are the re-keyed records for this topology's own tasks, in order; next is
	// the first not processed yet.
	pending []Rekeyed
	next    int
	// unpublished are the source partitions whose time changed since the last publish.
	unpublished []*partTime
	// watermark is the one this topology's processors have seen; listening counts its
	// tasks' processors that wait for it.
	watermark int64
	listening int
	// unstarted are the tasks added whose processors have not started yet (startTasks).
	unstarted []*Task

	cacheMaxBytes int64
	// cacheHold holds the watermark for the windows its caches hold updates of;
	// cachesFlushed says it may rise (holdCaches).
	cacheHold     *Hold
	cachesFlushed bool

	// last is what the previous record's topic and partition resolved to.
	last lastInput
	// current is the node whose Process runs, nil between records.
	current *runtimeNode
	// input is the consumed record being processed (the origin of a re-keyed one); nil
	// outside Process.
	input *SourceRecord
}

type patternSub struct {
	node *Node
	sub  int
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
	// e2e observes record-e2e-latency after each record a terminal node (one with no
	// children) processed, as Kafka Streams' ProcessorContextImpl does after forwarding to
	// a terminal node; nil at every other node.
	e2e Observer
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
	if n.e2e != nil {
		n.e2e.Observe(float64(t.clock()-rec.Timestamp) / 1000)
	}
	if err != nil {
		var ne *NodeError
		if errors.As(err, &ne) {
			return err
		}
		return &NodeError{Node: n.name, Err: err}
	}
	return nil
}

// Build turns the graph into a runnable topology. It makes the global task (unless
// opts.SkipGlobalStores); the other tasks are made on demand, or by AddTask with
// opts.ExplicitTasks.
func (b *StreamsBuilder) Build(opts TopologyOptions) (*Topology, error) {
	if len(b.sourceTopics) == 0 && len(b.patternSources) == 0 {
		return nil, errors.New("the topology has no source: call stream(...) on the builder")
	}
	t := &Topology{
		b:                b,
		global:           map[int]bool{},
		subtopologyOf:    map[string]int{},
		sourceSub:        map[string]int{},
		storeSub:         map[string]int{},
		globalStores:     map[string]bool{},
		nodeStores:       map[string][]string{},
		storeSpecs:       b.stores,
		collector:        opts.Collector,
		sensors:          opts.Sensors,
		clock:            opts.Clock,
		storeProvider:    opts.Stores,
		appID:            opts.ApplicationID,
		tasks:            map[TaskID]*Task{},
		explicit:         opts.ExplicitTasks,
		skipGlobal:       opts.SkipGlobalStores,
		shared:           map[storeKey]any{},
		taps:             map[string]TapFunc{},
		router:           opts.Router,
		time:             opts.Time,
		watermark:        -1,
		cacheMaxBytes:    opts.CacheMaxBytes,
		sourcePartitions: opts.SourcePartitions,
		throughTopics:    opts.RepartitionTopics,
		taskTime:         opts.TaskTime,
	}
	if t.time == nil {
		t.time = NewGlobalTime()
	}
	if t.cacheMaxBytes > 0 {
		t.cacheHold = t.time.NewHold()
	}
	for _, g := range b.GlobalStores() {
		t.globalStores[g.Store] = true
	}
	if len(b.stores) > 0 && opts.Stores == nil {
		return nil, errors.New("the topology has state stores but no store provider was given")
	}
	t.groups = b.subtopologies()
	globalSources := map[*Node]bool{}
	for _, n := range b.globalSources() {
		globalSources[n] = true
	}
	for id, group := range t.groups {
		for _, n := range group {
			t.subtopologyOf[n.Name] = id
			if len(n.Stores) > 0 {
				t.nodeStores[n.Name] = n.Stores
			}
			for _, s := range n.Stores {
				t.storeSub[s] = id
			}
			if globalSources[n] {
				t.global[id] = true
			}
			if n.Kind != SourceNode {
				continue
			}
			for _, topic := range n.Topics {
				t.sourceSub[topic] = id
			}
			if n.source != nil && n.source.pattern != nil {
				t.patternSubs = append(t.patternSubs, patternSub{n, id})
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
	for _, n := range b.nodes {
		if n.Kind == SinkNode && n.sink.repartitionTo != nil {
			t.addInternal(n.sink, t.subtopologyOf[n.sink.repartitionTo.Name])
		}
	}
	if len(t.global) > 0 && !t.skipGlobal {
		var nodes []*Node
		for id, group := range t.groups {
			if t.global[id] {
				nodes = append(nodes, group...)
			}
		}
		if _, err := t.addTask(globalTaskID, nodes, true); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// SetSourcePartitions gives the topology its source topics' partition counts anew, after a
// source pattern matched other topics: TaskIDs then lists the tasks the new topics'
// partitions need, for the next assignment to add (AddTask).
func (t *Topology) SetSourcePartitions(counts map[string]int32) { t.sourcePartitions = counts }

// TaskIDs are the tasks of the application: for every sub-topology (the global stores'
// aside) one per partition of its source topics (the largest count among them), as Kafka
// Streams creates them.
func (t *Topology) TaskIDs() []TaskID {
	var out []TaskID
	for id := range t.groups {
		if t.global[id] {
			continue
		}
		for p := range t.partitionCount(id) {
			out = append(out, TaskID{Subtopology: id, Partition: p})
		}
	}
	return out
}

// partitionCount is the number of tasks of a sub-topology: the largest partition count of
// the topics its sources read.
func (t *Topology) partitionCount(sub int) int32 {
	var n int32
	for _, node := range t.groups[sub] {
		if node.Kind != SourceNode {
			continue
		}
		if node.Internal {
			n = max(n, t.repartitionPartitions[node.Topics[0]])
			continue
		}
		for _, topic := range node.topicsRead(t.sourcePartitions) {
			n = max(n, t.sourcePartitions[topic])
		}
	}
	return n
}

// AddTask makes a task of the application run on this topology, on the state its stores
// hold (the committed state, when the task comes from another topology).
func (t *Topology) AddTask(id TaskID) error {
	if _, ok := t.tasks[id]; ok {
		return nil
	}
	if id.Subtopology < 0 || id.Subtopology >= len(t.groups) || t.global[id.Subtopology] || id.Partition < 0 ||
		t.explicit && id.Partition >= t.partitionCount(id.Subtopology) {
		return fmt.Errorf("the topology has no task %s", id)
	}
	_, err := t.addTask(id, t.groups[id.Subtopology], false)
	return err
}

func (t *Topology) addTask(id TaskID, nodes []*Node, global bool) (*Task, error) {
	k, err := t.newTask(id, nodes, global)
	if err != nil {
		return nil, err
	}
	t.tasks[id] = k
	i, _ := slices.BinarySearchFunc(t.order, id, func(x *Task, id TaskID) int { return x.id.Compare(id) })
	t.order = slices.Insert(t.order, i, k)
	if !global && slices.ContainsFunc(k.nodes, isTaskProcessor) {
		t.unstarted = append(t.unstarted, k)
	}
	t.listen(len(k.wmListeners))
	t.shareCaches()
	return k, nil
}

// CloseTask stops running a task here, after a commit barrier: its processors are closed
// (a Processor API processor's close runs) and dropped with their in-memory state (what a
// restart would lose; its stores keep what was committed), and re-keyed records for it go
// to the router from now on. An error is a processor's close failing; the task is closed
// anyway.
func (t *Topology) CloseTask(id TaskID) error {
	k, ok := t.tasks[id]
	if !ok || k.global {
		return nil
	}
	t.listen(-len(k.wmListeners))
	err := k.close()
	delete(t.tasks, id)
	t.order = slices.DeleteFunc(t.order, func(x *Task) bool { return x == k })
	t.unstarted = slices.DeleteFunc(t.unstarted, func(x *Task) bool { return x == k })
	t.last = lastInput{}
	t.shareCaches()
	if t.cacheHold != nil {
		t.holdCaches()
	}
	return err
}

// Close closes every task the topology runs, the global stores' too, as CloseTask does: the
// topology runs nothing afterwards.
func (t *Topology) Close() error {
	var errs []error
	for _, k := range t.order {
		errs = append(errs, k.close())
	}
	clear(t.tasks)
	t.listen(-t.listening)
	t.order, t.last, t.unstarted = nil, lastInput{}, nil
	return errors.Join(errs...)
}

// Tasks are the ids of the tasks this topology runs, in order (the global task aside).
func (t *Topology) Tasks() []TaskID {
	out := make([]TaskID, 0, len(t.order))
	for _, k := range t.order {
		if !k.global {
			out = append(out, k.id)
		}
	}
	return out
}

// TaskTime is the stream time of a task this topology runs, -1 before its first record or
// when the topology does not run it.
func (t *Topology) TaskTime(id TaskID) int64 {
	if k, ok := t.tasks[id]; ok {
		return k.StreamTime()
	}
	return -1
}

// task returns a task this topology runs, making it on demand unless its tasks are
// explicit; nil when another topology runs it.
func (t *Topology) task(id TaskID) (*Task, error) {
	if k, ok := t.tasks[id]; ok {
		return k, nil
	}
	if t.explicit {
		return nil, nil
	}
	if err := t.AddTask(id); err != nil {
		return nil, err
	}
	return t.tasks[id], nil
}

// sourceSubtopology is the sub-topology that reads topic: through a named source, a
// repartition source or a pattern.
func (t *Topology) sourceSubtopology(topic string) (int, bool) {
	if id, ok := t.sourceSub[topic]; ok {
		return id, true
	}
	for _, p := range t.patternSubs {
		if p.node.source.pattern.MatchString(topic) {
			t.sourceSub[topic] = p.sub
			return p.sub, true
		}
	}
	return 0, false
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

// Process runs one source record through its task. What sinks send meanwhile names it as
// their source (RecordCollector.Send), so in must stay unchanged until the collector is
// done with those records. The records it re-keys for this topology's own tasks are
// processed next (Drain), those for other topologies' tasks handed to the router.
//
// An error of the record itself returns at once, leaving what it re-keyed before the error
// queued: the caller decides whether the record is skipped (its exception handler), and
// Drain then processes the rest.
func (t *Topology) Process(in *SourceRecord) error {
	if err := t.startTasks(); err != nil {
		return &RecordError{Topic: in.Topic, Partition: in.Partition, Offset: in.Offset, Err: err}
	}
	t.input = in
	err := t.process(in)
	t.input = nil
	if err != nil {
		return err
	}
	return t.Drain()
}

// lastInput is the task, source node and partition time of the previous record's topic and
// partition: a consumer hands out a partition's records in runs, so most records skip the
// map look-ups.
type lastInput struct {
	topic     string
	partition int32
	task      *Task
	src       *runtimeNode
	part      *partTime
}

func (t *Topology) process(in *SourceRecord) error {
	last := &t.last
	if last.src == nil || last.partition != in.Partition || last.topic != in.Topic {
		k, src, err := t.sourceTask(in.Topic, in.Partition)
		if err != nil {
			return &RecordError{Topic: in.Topic, Partition: in.Partition, Offset: in.Offset, Err: err}
		}
		*last = lastInput{topic: in.Topic, partition: in.Partition, task: k, src: src,
			part: k.partition(TopicPartition{Topic: in.Topic, Partition: in.Partition})}
	}
	k, src := last.task, last.src
	sp := src.proc.(*sourceProc)
	rec, keep, err := sp.decode(src.ctx, *in)
	if err == nil && keep {
		k.observe(last.part, rec.Timestamp)
		k.processed.Inc()
		err = src.process(rec)
		if err == nil {
			err = k.punctuateStreamTime()
		}
	}
	if err != nil {
		return &RecordError{Topic: in.Topic, Partition: in.Partition, Offset: in.Offset, Err: err}
	}
	return nil
}

// sourceTask finds the task and source node that read a partition of a source topic.
func (t *Topology) sourceTask(topic string, partition int32) (*Task, *runtimeNode, error) {
	sub, ok := t.sourceSubtopology(topic)
	if !ok || t.global[sub] || t.internal[topic] != nil {
		return nil, nil, errors.New("no source in this topology reads this topic")
	}
	k, err := t.task(TaskID{Subtopology: sub, Partition: partition})
	if err != nil {
		return nil, nil, err
	}
	if k == nil {
		return nil, nil, fmt.Errorf("task %s does not run on this topology", TaskID{Subtopology: sub, Partition: partition})
	}
	src, ok := k.source(topic)
	if !ok {
		return nil, nil, errors.New("no source in this topology reads this topic")
	}
	return k, src, nil
}

// route takes a record a repartition sink re-keyed for a task: this topology's own go to
// its queue, the others' to the router.
func (t *Topology) route(r Rekeyed) error {
	k, err := t.task(r.Task)
	if err != nil {
		return err
	}
	if k == nil {
		if t.router == nil {
			return fmt.Errorf("task %s does not run on this topology", r.Task)
		}
		return t.router.Route(r)
	}
	t.pending = append(t.pending, r)
	return nil
}

// Drain processes the re-keyed records queued for this topology's tasks, in order, until
// none is left (those they re-key in turn included), then hands the router what it took
// and publishes the source partitions' times. It returns at the first record that fails,
// having taken it off the queue: call it again to go on with the others.
func (t *Topology) Drain() error {
	if err := t.drainAndFlush(); err != nil {
		return err
	}
	if t.listening > 0 {
		return t.AdvanceWatermark()
	}
	return nil
}

// drainAndFlush processes the queue, flushes the router and publishes.
func (t *Topology) drainAndFlush() error {
	for t.next < len(t.pending) {
		r := t.pending[t.next]
		t.pending[t.next] = Rekeyed{}
		t.next++
		if err := t.processRekeyed(&r); err != nil {
			return err
		}
	}
	clear(t.pending)
	t.pending, t.next = t.pending[:0], 0
	if t.router != nil {
		t.router.Flush()
	}
	if t.cachesFlushed {
		t.cachesFlushed = false
		t.holdCaches()
	}
	t.publish()
	return nil
}

// ProcessRekeyed runs a record another topology re-keyed for one of this topology's tasks,
// then Drain. An error names the record's origin, as Process's names the consumed record.
func (t *Topology) ProcessRekeyed(r *Rekeyed) error {
	if err := t.startTasks(); err != nil {
		return err
	}
	if err := t.processRekeyed(r); err != nil {
		return err
	}
	return t.Drain()
}

func (t *Topology) processRekeyed(r *Rekeyed) error {
	k, err := t.task(r.Task)
	if err == nil && k == nil {
		err = fmt.Errorf("task %s does not run on this topology", r.Task)
	}
	var src *runtimeNode
	if err == nil {
		var ok bool
		if src, ok = k.sources[r.Topic]; !ok {
			err = fmt.Errorf("task %s reads no topic %s", r.Task, r.Topic)
		}
	}
	if err == nil {
		outer := t.input
		t.input = r.Origin
		k.observe(nil, r.Record.Timestamp)
		k.processed.Inc()
		err = src.process(r.Record)
		if err == nil {
			err = k.punctuateStreamTime()
		}
		t.input = outer
	}
	if err != nil && r.Origin != nil {
		return &RecordError{Topic: r.Origin.Topic, Partition: r.Origin.Partition, Offset: r.Origin.Offset, Err: err}
	}
	return err
}

// HasWallClockPunctuators reports whether any processor scheduled a wall-clock punctuator,
// or tasks have not started yet (their processors may schedule one when they do:
// PunctuateWallClock starts them).
func (t *Topology) HasWallClockPunctuators() bool {
	if len(t.unstarted) > 0 {
		return true
	}
	for _, k := range t.order {
		for _, p := range k.punctuators {
			if p.typ == WallClockTime && !p.cancelled {
				return true
			}
		}
	}
	return false
}

// PunctuateWallClock starts the tasks not started yet, then runs the wall-clock punctuators
// that are due, then Drain.
func (t *Topology) PunctuateWallClock() error {
	if err := t.startTasks(); err != nil {
		return err
	}
	now := t.clock()
	for _, k := range t.order {
		if err := k.punctuate(WallClockTime, now); err != nil {
			return err
		}
	}
	return t.Drain()
}

// ChangelogTopic is the changelog topic of a store: <application.id>-<store>-changelog.
func ChangelogTopic(appID, store string) string { return appID + "-" + store + "-changelog" }

// openStore returns (opening on first use) one partition of a declared store from the
// handles in m; open makes the typed store, or says the store is of another kind.
func openStore[S any](t *Topology, m map[storeKey]any, name string, partition int32, kind string, open func(spec *StoreSpec, topic string) (S, error)) (S, error) {
	var zero S
	k := storeKey{name, partition}
	if s, ok := m[k]; ok {
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
	m[k] = s
	return s, nil
}

func errWrongStoreType(spec *StoreSpec, want string) error {
	return fmt.Errorf("state store %s is a %v store, not a %s store", spec.Name, spec.Type, want)
}

// storeHandles are the handles of one store partition: the task's that owns it (a
// sibling's for a processor that reaches into another partition), or the topology's for
// a global store or one no processor is connected to.
func (t *Topology) storeHandles(name string, partition int32, from *Task) (map[storeKey]any, error) {
	sub, owned := t.storeSub[name]
	if t.globalStores[name] || !owned {
		return t.shared, nil
	}
	if from != nil && from.id.Partition == partition && from.id.Subtopology == sub {
		return from.stores, nil
	}
	id := TaskID{Subtopology: sub, Partition: partition}
	k, err := t.task(id)
	if err != nil {
		return nil, err
	}
	if k == nil {
		return nil, fmt.Errorf("store %s partition %d belongs to task %s, which does not run on this topology", name, partition, id)
	}
	return k.stores, nil
}

// Store returns one partition of a declared key-value store, for queries and tests.
func (t *Topology) Store(name string, partition int32) (*KeyValueStore, error) {
	return t.kvStore(name, partition, nil)
}

func (t *Topology) kvStore(name string, partition int32, from *Task) (*KeyValueStore, error) {
	m, err := t.storeHandles(name, partition, from)
	if err != nil {
		return nil, err
	}
	return openStore(t, m, name, partition, "key-value", func(spec *StoreSpec, topic string) (*KeyValueStore, error) {
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
func (noSensors) TaskProcessed(string) Counter         { return nopCounter{} }

type nopObserver struct{}

func (nopObserver) Observe(float64) {}

type nopCounter struct{}

func (nopCounter) Inc() {}

package pipeline

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// TaskID names a task as Kafka Streams does: <sub-topology>_<partition>.
type TaskID struct {
	Subtopology int
	Partition   int32
}

func (id TaskID) String() string {
	return strconv.Itoa(id.Subtopology) + "_" + strconv.Itoa(int(id.Partition))
}

// ParseTaskID reads a task id written as <sub-topology>_<partition>.
func ParseTaskID(s string) (TaskID, error) {
	sub, part, ok := strings.Cut(s, "_")
	st, err1 := strconv.Atoi(sub)
	p, err2 := strconv.ParseInt(part, 10, 32)
	if !ok || err1 != nil || err2 != nil || st < 0 || p < 0 {
		return TaskID{}, fmt.Errorf("task id %q is not <sub-topology>_<partition>", s)
	}
	return TaskID{Subtopology: st, Partition: int32(p)}, nil
}

// Compare orders task ids by sub-topology, then partition.
func (id TaskID) Compare(o TaskID) int {
	if id.Subtopology != o.Subtopology {
		return id.Subtopology - o.Subtopology
	}
	return int(id.Partition) - int(o.Partition)
}

// Task is one sub-topology run for one partition, as a Kafka Streams task: its own
// processors (their in-memory state with them), its stream time and its source
// partitions' times, its punctuators, its record caches and its partitions of the
// sub-topology's stores. A topology runs some tasks of the application; a task is created
// (AddTask), runs the records of its partitions, commits at the barrier with the others, and
// is closed (CloseTask) when it moves to another topology or agent, which creates it afresh
// on the committed state, as Kafka Streams re-initialises a migrated task.
type Task struct {
	id TaskID
	t  *Topology
	// global marks the task that keeps the global stores (their sub-topologies): it is no
	// Kafka Streams task, and runs on one topology of the application.
	global bool

	nodes  []*runtimeNode
	byName map[string]*runtimeNode
	// sources are the source nodes by topic (a repartition topic for a repartition
	// source); patterns are the pattern sources, for the topics they match.
	sources  map[string]*runtimeNode
	patterns []patternSource

	// streamTime is the largest timestamp of the records the task processed,
	// math.MinInt64 before its first.
	streamTime int64
	// parts are its source partitions' times.
	parts map[TopicPartition]*partTime

	punctuators []*punctuator
	// cancelledPunctuators counts the cancelled punctuators still in punctuators.
	cancelledPunctuators int
	wmListeners          []func(wm int64) error
	commitListeners      []func() error
	caches               []*recordCache
	cacheOf              map[string]*recordCache // by store

	stores      map[storeKey]any // *KeyValueStore, *WindowStore, ...
	versionedKV map[storeKey]*KeyValueStore

	processed Counter
}

// partTime is one source partition's stream time as its task sees it, and its slot in the
// global time, where it is published.
type partTime struct {
	time  int64 // math.MinInt64 before the first record
	slot  *timeSlot
	dirty bool // changed since it was last published
}

// ID is the task's id; the global task's is {-1, -1}.
func (k *Task) ID() TaskID { return k.id }

// globalTaskID names the task that keeps the global stores.
var globalTaskID = TaskID{Subtopology: -1, Partition: -1}

// newTask makes the task of one sub-topology's group of nodes (or of every global
// store's, for the global task) for one partition and initialises its processors.
func (t *Topology) newTask(id TaskID, group []*Node, global bool) (*Task, error) {
	k := &Task{
		id: id, t: t, global: global,
		byName:      map[string]*runtimeNode{},
		sources:     map[string]*runtimeNode{},
		streamTime:  math.MinInt64,
		parts:       map[TopicPartition]*partTime{},
		cacheOf:     map[string]*recordCache{},
		stores:      map[storeKey]any{},
		versionedKV: map[storeKey]*KeyValueStore{},
		processed:   t.sensors.TaskProcessed(id.String()),
	}
	if global {
		k.processed = nopCounter{}
	}
	relaxed := map[*Node]bool{}
	byNode := map[*Node]*runtimeNode{}
	for _, n := range group {
		rn := &runtimeNode{name: n.Name, processed: t.sensors.Processed(n.Name), tap: t.taps[n.Name]}
		switch n.Kind {
		case SourceNode:
			if n.Internal {
				rn.proc = &passThrough{}
			} else {
				rn.proc = &sourceProc{spec: n.source}
			}
		case SinkNode:
			if n.sink.repartitionTo != nil {
				rn.proc = &repartitionSink{spec: n.sink, target: t.subtopologyOf[n.sink.repartitionTo.Name]}
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
		k.nodes = append(k.nodes, rn)
		k.byName[n.Name] = rn
	}
	for _, n := range group {
		rn := byNode[n]
		for _, c := range n.Children {
			rn.children = append(rn.children, byNode[c])
		}
		// A source observes on entry (sourceProc); the in-memory repartition topics'
		// nodes observe nothing, as their sources do not (docs/metrics.md); nor does the
		// global task, whose context Kafka Streams does not record it in either.
		if len(n.Children) == 0 && n.Kind != SourceNode && !n.Internal && !global {
			rn.e2e = t.sensors.EndToEnd(n.Name)
		}
		if n.Kind != SourceNode {
			continue
		}
		for _, topic := range n.Topics {
			k.sources[topic] = rn
		}
		if n.source != nil && n.source.pattern != nil {
			k.patterns = append(k.patterns, patternSource{n.source.pattern, rn})
		}
	}
	for _, rn := range k.nodes {
		rn.ctx = &Context{node: rn, topology: t, task: k}
		if err := rn.proc.Init(rn.ctx); err != nil {
			return nil, &NodeError{Node: rn.name, Err: err}
		}
	}
	return k, nil
}

// source finds the source node of a topic the task reads, a pattern source's included
// (remembered for the topic's next records).
func (k *Task) source(topic string) (*runtimeNode, bool) {
	if src, ok := k.sources[topic]; ok {
		return src, true
	}
	for _, p := range k.patterns {
		if p.re.MatchString(topic) {
			k.sources[topic] = p.node
			return p.node, true
		}
	}
	return nil, false
}

// partition returns the time of one of the task's source partitions, made on first use.
func (k *Task) partition(tp TopicPartition) *partTime {
	p := k.parts[tp]
	if p == nil {
		p = &partTime{time: math.MinInt64, slot: k.t.time.slot(tp)}
		k.parts[tp] = p
	}
	return p
}

// observe advances the task's stream time and, for a record of a source partition, that
// partition's time, to be published.
func (k *Task) observe(p *partTime, ts int64) {
	k.streamTime = max(k.streamTime, ts)
	if p == nil || ts <= p.time {
		return
	}
	p.time = ts
	if !p.dirty {
		p.dirty = true
		k.t.unpublished = append(k.t.unpublished, p)
	}
}

// StreamTime is the task's stream time (the largest timestamp of its records), -1 before
// its first.
func (k *Task) StreamTime() int64 {
	if k.streamTime == math.MinInt64 {
		return -1
	}
	return k.streamTime
}

// seen reports whether the task processed a record since it was created.
func (k *Task) seen() bool { return k.streamTime != math.MinInt64 }

// punctuateStreamTime runs the task's stream-time punctuators that are due.
func (k *Task) punctuateStreamTime() error { return k.punctuate(StreamTime, k.streamTime) }

// punctuate fires the task's punctuators of typ due at now as Kafka Streams'
// PunctuationQueue does: the earliest due first, ties in the order they were scheduled;
// each once, after which its next time is past now; one that a punctuator cancels before
// its turn does not fire. One that a punctuator schedules waits for the next round, where
// Kafka Streams fires a due one in the same round: a punctuator that schedules another each
// time would never end the round.
func (k *Task) punctuate(typ PunctuationType, now int64) error {
	if k.cancelledPunctuators > 0 {
		k.punctuators = slices.DeleteFunc(k.punctuators, func(p *punctuator) bool { return p.cancelled })
		k.cancelledPunctuators = 0
	}
	// Punctuators only join the end of the list during the round.
	round := k.punctuators
	for {
		var first *punctuator
		for _, p := range round {
			if p.typ != typ || p.cancelled || p.next > now {
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

// startTasks makes and initialises the user processors of the tasks added since they last
// started, as Kafka Streams initialises a task's processors when the task starts, before
// its first record: a wall-clock schedule made in init has its grid from the time the task
// started, and fires whether records come or not (docs/time.md, Punctuation). Tasks start
// one after the other in task id order, each with its processors in topology order. The
// processors of global stores start on their first record. Whoever runs the topology calls
// Process, ProcessRekeyed or PunctuateWallClock, which start them, inside an epoch, as what
// a processor's init writes or forwards belongs to one.
func (t *Topology) startTasks() error {
	if len(t.unstarted) == 0 {
		return nil
	}
	tasks := t.unstarted
	t.unstarted = nil
	slices.SortFunc(tasks, func(a, b *Task) int { return a.id.Compare(b.id) })
	for _, k := range tasks {
		for _, rn := range k.nodes {
			if !isTaskProcessor(rn) {
				continue
			}
			if _, err := rn.proc.(*userProcNode).task(k.id.Partition); err != nil {
				return &NodeError{Node: rn.name, Err: err}
			}
		}
	}
	return nil
}

// taskCloser is a processor with something to close when its task closes (a Processor
// API processor's close).
type taskCloser interface{ closeTask() error }

// close closes the task's processors and drops them, and its store partitions' handles:
// the stores belong to whoever creates the task next.
func (k *Task) close() error {
	var errs []error
	for _, rn := range k.nodes {
		if c, ok := rn.proc.(taskCloser); ok {
			errs = append(errs, c.closeTask())
		}
	}
	clear(k.stores)
	k.nodes, k.byName, k.sources = nil, nil, nil
	return errors.Join(errs...)
}

// SourceTasks says which task reads each partition of the source topics (those a pattern
// matches included), from the graph alone: what whoever hands consumed records to the
// topologies that run their tasks needs. It is not safe for concurrent use.
type SourceTasks struct {
	subs     map[string]int
	patterns []patternSub
}

// SourceTasks maps the source topics of the graph to the sub-topologies that read them.
func (b *StreamsBuilder) SourceTasks() *SourceTasks {
	s := &SourceTasks{subs: map[string]int{}}
	for id, group := range b.subtopologies() {
		for _, n := range group {
			if n.Kind != SourceNode || n.Internal || n.source == nil {
				continue
			}
			for _, topic := range n.Topics {
				s.subs[topic] = id
			}
			if n.source.pattern != nil {
				s.patterns = append(s.patterns, patternSub{n, id})
			}
		}
	}
	return s
}

// Of is the task that reads a partition of a source topic; false for a topic no source of
// the graph reads.
func (s *SourceTasks) Of(tp TopicPartition) (TaskID, bool) {
	sub, ok := s.subs[tp.Topic]
	if !ok {
		for _, p := range s.patterns {
			if p.node.source.pattern.MatchString(tp.Topic) {
				sub, ok = p.sub, true
				s.subs[tp.Topic] = sub
				break
			}
		}
	}
	return TaskID{Subtopology: sub, Partition: tp.Partition}, ok
}

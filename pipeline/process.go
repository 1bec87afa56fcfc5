package pipeline

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// UserProcessor is a processor written against the Processor API (process/processValues).
// Like Kafka Streams, the engine makes one instance per task and initialises it when the
// task starts, before the task's first record (Topology.startTasks).
type UserProcessor interface {
	Init(ctx *ProcessorContext) error
	Process(rec Record) error
	Close() error
}

// ProcessorSupplier makes a UserProcessor for one task.
type ProcessorSupplier func() (UserProcessor, error)

// Process adds a Processor API node connected to the named stores (Kafka Streams'
// KStream#process). Its output may change keys.
func (s *KStream) Process(supplier ProcessorSupplier, stores []string, name string) (*KStream, error) {
	return s.addProcess("KSTREAM-PROCESSOR-", supplier, stores, name, false)
}

// ProcessValues is Process for processors that keep the key (KStream#processValues).
func (s *KStream) ProcessValues(supplier ProcessorSupplier, stores []string, name string) (*KStream, error) {
	return s.addProcess("KSTREAM-PROCESSVALUES-", supplier, stores, name, true)
}

func (s *KStream) addProcess(prefix string, supplier ProcessorSupplier, stores []string, name string, fixedKey bool) (*KStream, error) {
	for _, st := range stores {
		if _, ok := s.b.stores[st]; !ok {
			return nil, fmt.Errorf("processor uses state store %q, which is not declared: add it with addStateStore first", st)
		}
	}
	// Kafka's process(supplier, Named, ...) takes the name as it is (NamedInternal.name()),
	// where other named operators still burn an index: only an unnamed one takes one here.
	if name == "" {
		name = s.b.newName(prefix, "")
	}
	n, err := s.b.addNode(&Node{Name: name, Kind: ProcessorNode, factory: func() Processor {
		return &userProcNode{supplier: supplier, fixedKey: fixedKey, tasks: map[int32]*ProcessorContext{}}
	}})
	if err != nil {
		return nil, err
	}
	s.node.addChild(n)
	n.Stores = append([]string(nil), stores...)
	if fixedKey {
		return s.derive(n, Serdes{Key: s.serdes.Key}, s.keyChanged), nil
	}
	return s.derive(n, Serdes{}, true), nil
}

// userProcNode runs a UserProcessor per task.
type userProcNode struct {
	ctx      *Context
	supplier ProcessorSupplier
	fixedKey bool
	// global is the store of an addGlobalStore processor: one task, partition 0, whatever
	// the record's partition.
	global string
	tasks  map[int32]*ProcessorContext
}

func (p *userProcNode) Init(ctx *Context) error { p.ctx = ctx; return nil }

func (p *userProcNode) Process(rec Record) error {
	task := rec.Partition
	if p.global != "" {
		task = 0
	}
	pc, err := p.task(task)
	if err != nil {
		return err
	}
	pc.current = &rec
	defer func() { pc.current = nil }()
	return pc.proc.Process(rec)
}

// closeTask closes the task's processor, if it was made.
func (p *userProcNode) closeTask() error {
	var errs []error
	for _, pc := range p.tasks {
		if err := pc.proc.Close(); err != nil {
			errs = append(errs, &NodeError{Node: pc.node.name, Err: fmt.Errorf("close: %w", err)})
		}
	}
	clear(p.tasks)
	return errors.Join(errs...)
}

// task is the processor of a task, made and initialised first if the task has none yet: a
// task its topology made on demand (a topic a pattern source matched in the test driver)
// starts on its first record.
func (p *userProcNode) task(task int32) (*ProcessorContext, error) {
	if pc, ok := p.tasks[task]; ok {
		return pc, nil
	}
	proc, err := p.supplier()
	if err != nil {
		return nil, err
	}
	pc := p.ctx.processorContext(task, p.fixedKey, proc)
	pc.global = p.global != ""
	p.tasks[task] = pc
	if err := proc.Init(pc); err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	return pc, nil
}

// isTaskProcessor reports whether n runs a user processor per task (not a global store's),
// which its task starts.
func isTaskProcessor(n *runtimeNode) bool {
	up, ok := n.proc.(*userProcNode)
	return ok && up.global == ""
}

// ProcessorContext is what a UserProcessor sees for its task: forwarding, punctuation,
// state stores and the task's time.
type ProcessorContext struct {
	node      *runtimeNode
	task      *Task
	partition int32
	fixedKey  bool
	// global marks the processor of a global store, whose output is Void: it neither
	// forwards nor schedules, as Kafka's GlobalProcessorContextImpl.
	global  bool
	proc    UserProcessor
	current *Record // the record being processed; nil during punctuation
}

// processorContext is the ProcessorContext of one task of the node.
func (c *Context) processorContext(partition int32, fixedKey bool, proc UserProcessor) *ProcessorContext {
	return &ProcessorContext{node: c.node, task: c.task, partition: partition, fixedKey: fixedKey, proc: proc}
}

// Name is the processor node's name.
func (c *ProcessorContext) Name() string { return c.node.name }

// Partition is the task's input partition.
func (c *ProcessorContext) Partition() int32 { return c.partition }

// TaskID is Kafka Streams' task id, <sub-topology>_<partition>.
func (c *ProcessorContext) TaskID() string {
	return TaskID{Subtopology: c.task.t.subtopologyOf[c.node.name], Partition: c.partition}.String()
}

// StreamTime is the task's stream time (largest record timestamp seen), -1 before any.
func (c *ProcessorContext) StreamTime() int64 { return c.task.StreamTime() }

// WallClock is the current wall-clock time in milliseconds.
func (c *ProcessorContext) WallClock() int64 { return c.task.t.clock() }

// Current is the record being processed, or nil in a punctuation.
func (c *ProcessorContext) Current() *Record { return c.current }

// Forward sends rec to the node's children. A processValues processor cannot change the key,
// and can forward only while it processes a record.
func (c *ProcessorContext) Forward(rec Record) error {
	if c.global {
		return c.globalRefuses("forward")
	}
	if c.fixedKey {
		if c.current == nil {
			return fmt.Errorf("processValues %s: cannot forward outside process() (the key is fixed by the record being processed)", c.node.name)
		}
		rec.Key = c.current.Key
	}
	return c.node.ctx.Forward(rec)
}

// ForwardTo sends rec to one named child.
func (c *ProcessorContext) ForwardTo(child string, rec Record) error {
	if c.global {
		return c.globalRefuses("forward")
	}
	if c.fixedKey {
		if c.current == nil {
			return fmt.Errorf("processValues %s: cannot forward outside process()", c.node.name)
		}
		rec.Key = c.current.Key
	}
	return c.node.ctx.ForwardTo(child, rec)
}

// StateStore returns the task's partition of a key-value store connected to this
// processor. Window, session and versioned stores have accessors of their own; StoreType
// tells which one a store needs.
func (c *ProcessorContext) StateStore(name string) (*KeyValueStore, error) {
	partition, err := c.storePartition(name)
	if err != nil {
		return nil, err
	}
	return c.task.t.kvStore(name, partition, c.task)
}

// StoreType is the type of a store connected to this processor.
func (c *ProcessorContext) StoreType(name string) (StoreType, error) {
	if _, err := c.storePartition(name); err != nil {
		return 0, err
	}
	return c.task.t.StoreType(name)
}

// storePartition is the partition of a store this processor reads: its task's, or 0 for
// a global store, which every processor may read unconnected, as in Kafka Streams.
func (c *ProcessorContext) storePartition(name string) (int32, error) {
	if c.task.t.globalStores[name] {
		return 0, nil
	}
	return c.partition, c.connected(name)
}

// connected checks that the processor listed the store, as Kafka Streams requires.
func (c *ProcessorContext) connected(name string) error {
	for _, s := range c.task.t.nodeStores[c.node.name] {
		if s == name {
			return nil
		}
	}
	return fmt.Errorf("processor %s has no access to state store %s as the store is not connected to the processor (list it in the stores option)", c.node.name, name)
}

func (c *ProcessorContext) globalRefuses(what string) error {
	return fmt.Errorf("%s: the processor of a global store cannot %s (it only keeps its store; Kafka Streams' global processor context refuses it too)", c.node.name, what)
}

// PunctuationType says which clock drives a punctuator.
type PunctuationType int

const (
	StreamTime PunctuationType = iota
	WallClockTime
)

// Punctuator is called with the time that triggered it.
type Punctuator func(timestamp int64) error

// Cancellable stops a scheduled punctuator.
type Cancellable struct{ p *punctuator }

// Cancel stops the punctuator; it is not called again.
func (c *Cancellable) Cancel() {
	if !c.p.cancelled {
		c.p.cancelled = true
		c.p.ctx.task.cancelledPunctuators++
	}
}

type punctuator struct {
	ctx      *ProcessorContext
	typ      PunctuationType
	interval int64
	// next is the schedule's next time; its times stay on one grid, the first time plus
	// whole intervals (Kafka Streams' PunctuationSchedule).
	next      int64
	fn        Punctuator
	cancelled bool
	latency   Observer
}

// Schedule calls fn every interval ms of stream time or wall-clock time, as Kafka Streams'
// ProcessorContext#schedule: a stream-time schedule's grid starts at 0, so it first fires
// on the task's next record; a wall-clock one's grid starts interval ms from now. After a
// jump over several intervals it fires once, and its next time is the first time of its
// grid after the jump (docs/time.md, Punctuation).
func (c *ProcessorContext) Schedule(interval int64, typ PunctuationType, fn Punctuator) (*Cancellable, error) {
	if c.global {
		return nil, c.globalRefuses("schedule")
	}
	if interval < 1 {
		return nil, fmt.Errorf("schedule: the interval must be at least 1 ms, not %d", interval)
	}
	p := &punctuator{ctx: c, typ: typ, interval: interval, fn: fn, latency: c.task.t.sensors.Punctuation(c.node.name)}
	if typ == WallClockTime {
		p.next = addUpTo(c.task.t.clock(), interval)
	}
	c.task.punctuators = append(c.task.punctuators, p)
	return &Cancellable{p: p}, nil
}

// addUpTo is a + b for b ≥ 0, or math.MaxInt64 when that overflows: a schedule whose next
// time is past int64 never fires again.
func addUpTo(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// fire runs p, which is due at now (p.next ≤ now), and moves its next time to the first
// time of its grid after now, as Kafka Streams' PunctuationSchedule#next: the intervals
// missed are skipped, not replayed, and the grid stays.
func (p *punctuator) fire(now int64) error {
	p.next = addUpTo(p.next+(now-p.next)/p.interval*p.interval, p.interval)
	start := time.Now()
	err := p.fn(now)
	p.latency.Observe(time.Since(start).Seconds())
	if err != nil {
		return &NodeError{Node: p.ctx.node.name, Err: fmt.Errorf("punctuator: %w", err)}
	}
	return nil
}

package pipeline

import (
	"fmt"
	"slices"
)

// NodeKind tells sources, processors and sinks apart, as TopologyDescription does.
type NodeKind int

const (
	SourceNode NodeKind = iota
	ProcessorNode
	SinkNode
)

// Node is one node of the topology graph the DSL builds. Building (this file and
// builder*.go) and running (topology.go) are separate: a Node only describes what to run
// and how to make it.
type Node struct {
	Name   string
	Kind   NodeKind
	Topics []string // sources: subscribed topics
	// Pattern is a pattern source's regex as written (Topics is empty then).
	Pattern string
	Topic   string // sinks: fixed topic ("" with a topic extractor)
	Stores  []string
	// ReadsGlobal are the global stores a processor reads (a join with a global table): not
	// in Stores, since Kafka Streams connects no processor to a global store.
	ReadsGlobal []string
	// valueSerde is the serde the DSL knows the node's values to be written with (its
	// stream's or table's), nil when unknown: a tap shows values as it writes them.
	valueSerde Serde
	// Internal marks the nodes of a repartition topic, which StoatFlow keeps in memory.
	Internal bool
	Parents  []*Node
	Children []*Node

	source  *sourceSpec
	sink    *sinkSpec
	factory func() Processor // processors
	// repartitionFilter marks the filter in front of a repartition topic (nullKeyFilter).
	repartitionFilter bool
	// relaxesNullKeys marks a join that joins records with a null key (a stream-table left
	// join, left and outer stream-stream joins): Kafka Streams' NULL_KEY_RELAXED_JOIN.
	relaxesNullKeys bool
	// finalsTaken marks a windowed aggregation a suppression takes its final results from
	// (suppress_final.go): there is one such suppression.
	finalsTaken bool
}

func (n *Node) addChild(c *Node) {
	n.Children = append(n.Children, c)
	c.Parents = append(c.Parents, n)
}

// Processor is the runtime half of a processor node.
type Processor interface {
	// Init is called once before the first record, with the node's context.
	Init(ctx *Context) error
	// Process handles one record; it forwards results through the Context given to Init.
	Process(rec Record) error
}

// Context is what a running processor sees: its name, where to forward, and the sensors.
type Context struct {
	node     *runtimeNode
	topology *Topology
	task     *Task
	// lastKV is the key-value store partition store returned last: an aggregation asks for
	// the same one for most records, and finding it takes two map look-ups by name.
	lastKV struct {
		name      string
		partition int32
		store     *KeyValueStore
	}
	// block is what is left of the block carve cuts records' bytes from.
	block []byte
}

// carveBlock is the size of the blocks carve allocates: small, since a record a collector
// still holds keeps its whole block alive. A record larger than carveMax gets an allocation
// of its own, so that at most a quarter of a block goes unused when a record does not fit.
const (
	carveBlock = 4096
	carveMax   = carveBlock / 4
)

// carve returns an empty slice with room for n bytes, for the bytes of one record the node
// writes. A collector keeps what it is sent until it is done with it (the producer until the
// broker acknowledged it, the test driver for good), so these bytes are never written over:
// each record gets a part of its own of a block shared by many, one allocation instead of
// one per record, and the slice's capacity ends where its part does, so that appending past
// n moves it elsewhere instead of into the next record's. A nil context allocates.
func (c *Context) carve(n int) []byte {
	if c == nil || n > carveMax {
		return make([]byte, 0, n)
	}
	if len(c.block) < n {
		c.block = make([]byte, carveBlock)
	}
	out := c.block[:0:n]
	c.block = c.block[n:]
	return out
}

// Name is the processor node's name.
func (c *Context) Name() string { return c.node.name }

// Forward passes rec to every child of this node, in the order they were added.
func (c *Context) Forward(rec Record) error {
	if c.node.tap != nil {
		c.node.tap(rec)
	}
	for _, child := range c.node.children {
		if err := child.process(rec); err != nil {
			return err
		}
	}
	return nil
}

// ForwardTo passes rec to the child with the given name only.
func (c *Context) ForwardTo(child string, rec Record) error {
	for _, ch := range c.node.children {
		if ch.name == child {
			if c.node.tap != nil {
				c.node.tap(rec)
			}
			return ch.process(rec)
		}
	}
	return fmt.Errorf("processor %s has no child %q", c.node.name, child)
}

// Drop counts a record this node discarded on purpose, with the reason it was dropped.
func (c *Context) Drop(reason DropReason) {
	d := &c.node.drops[reason]
	if *d == nil {
		*d = c.topology.sensors.Dropped(c.node.name, reason)
	}
	(*d).Inc()
}

// PartitionsFor returns the partition count of a topic, as the record collector knows it.
func (c *Context) PartitionsFor(topic string) (int32, error) {
	return c.topology.collector.PartitionsFor(topic)
}

// WallClock is the current wall-clock time in milliseconds (the test driver's mock clock
// under `stoatflow test`).
func (c *Context) WallClock() int64 { return c.topology.clock() }

// The rest is what the engine's own processors reach of the topology, always through
// their context.

// store returns a partition of a key-value store.
func (c *Context) store(name string, partition int32) (*KeyValueStore, error) {
	if last := &c.lastKV; last.store != nil && last.partition == partition && last.name == name {
		return last.store, nil
	}
	var s *KeyValueStore
	var err error
	if spec, ok := c.topology.storeSpecs[name]; ok && spec.Type == VersionedKeyValueStoreType {
		// An aggregation materialized as a versioned store (KIP-914).
		s, err = c.task.versionedKeyValue(name, partition)
	} else {
		s, err = c.topology.kvStore(name, partition, c.task)
	}
	if err != nil {
		return nil, err
	}
	// A task keeps every store partition it opened for its lifetime, which is the
	// context's, so the one kept here stays the one store would find.
	c.lastKV.name, c.lastKV.partition, c.lastKV.store = name, partition, s
	return s, nil
}

// versionedStore returns a partition of a versioned key-value store.
func (c *Context) versionedStore(name string, partition int32) (*VersionedStore, error) {
	return c.topology.versionedStore(name, partition, c.task)
}

// putVersioned puts value under rec's key at rec's time into a versioned store, as
// KTableSource and the stores of join results do (KIP-914). A put older than the history
// retention is not stored: it is counted as late and kept is false. outOfOrder says the put
// is older than the key's latest version: it stays in the history and goes on marked so.
func (c *Context) putVersioned(store *VersionedStore, rec Record, value any) (outOfOrder, kept bool, err error) {
	validTo, err := store.Put(rec.Key, value, rec.Timestamp)
	if err != nil {
		return false, false, err
	}
	if validTo == NotPut {
		c.Drop(DropLate)
		return false, false, nil
	}
	return validTo != ValidToUndefined, true, nil
}

// windowStore returns a partition of a window store.
func (c *Context) windowStore(name string, partition int32) (*WindowStore, error) {
	return c.topology.windowStore(name, partition, c.task)
}

// sessionStore returns a partition of a session store.
func (c *Context) sessionStore(name string, partition int32) (*SessionStore, error) {
	return c.topology.sessionStore(name, partition, c.task)
}

// emitter is how the node forwards the updates of a store it materializes: through the
// record cache in front of the store, or straight to its children (Topology.emitFor).
func (c *Context) emitter(store string) func(Record) error {
	return c.task.emitFor(store, c.Forward)
}

// send writes a record to a topic through the record collector, naming the record being
// processed as its source.
func (c *Context) send(topic string, partition int32, key, value []byte, headers Headers, timestampMs int64) error {
	return c.topology.collector.Send(topic, partition, key, value, headers, timestampMs, c.topology.input)
}

// endToEnd observes the node's record-e2e-latency.
func (c *Context) endToEnd() Observer { return c.topology.sensors.EndToEnd(c.node.name) }

// watermark is the global watermark as the task's topology has applied it, -1 before there
// is one.
func (c *Context) watermark() int64 { return c.topology.watermark }

// onWatermark runs fn each time the global watermark advances.
func (c *Context) onWatermark(fn func(wm int64) error) {
	c.task.wmListeners = append(c.task.wmListeners, fn)
}

// onCommit runs fn at each commit barrier, after the record caches are flushed.
func (c *Context) onCommit(fn func() error) {
	c.task.commitListeners = append(c.task.commitListeners, fn)
}

// parents are the processors of the nodes this one is a child of.
func (c *Context) parents() []Processor {
	var out []Processor
	for _, rn := range c.task.nodes {
		if slices.Contains(rn.children, c.node) {
			out = append(out, rn.proc)
		}
	}
	return out
}

// internalTopic is an internal topic's name as Kafka Streams decorates it:
// <application.id>-<name>.
func (c *Context) internalTopic(name string) string { return c.topology.appID + "-" + name }

// repartitionPartitions is the partition count of a repartition topic, 0 when unknown.
func (c *Context) repartitionPartitions(topic string) int32 {
	return c.topology.repartitionPartitions[topic]
}

// forEachSeenTask runs fn for the task's partition if the task has seen a record since it
// was made.
func (c *Context) forEachSeenTask(fn func(partition int32) error) error {
	if !c.task.seen() {
		return nil
	}
	return fn(c.task.id.Partition)
}

// rekey hands a record to the task of another sub-topology that reads topic, for its
// partition: a repartition topic's records, in memory.
func (c *Context) rekey(sub int, topic string, rec Record) error {
	return c.topology.route(Rekeyed{Task: TaskID{Subtopology: sub, Partition: rec.Partition}, Topic: topic, Record: rec, Origin: c.topology.input})
}

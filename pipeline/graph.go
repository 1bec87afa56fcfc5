package pipeline

import "fmt"

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
	Topic  string   // sinks: fixed topic ("" with a topic extractor)
	Stores []string
	// Internal marks the nodes of a repartition topic, which StoatFlow keeps in memory.
	Internal bool
	Parents  []*Node
	Children []*Node

	source  *sourceSpec
	sink    *sinkSpec
	factory func() Processor // processors
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
}

// Name is the processor node's name.
func (c *Context) Name() string { return c.node.name }

// Forward passes rec to every child of this node, in the order they were added.
func (c *Context) Forward(rec Record) error {
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
			return ch.process(rec)
		}
	}
	return fmt.Errorf("processor %s has no child %q", c.node.name, child)
}

// Drop counts a record this node discarded on purpose, with the reason it was dropped.
func (c *Context) Drop(reason DropReason) { c.topology.drops[reason].Inc() }

// PartitionsFor returns the partition count of a topic, as the record collector knows it.
func (c *Context) PartitionsFor(topic string) (int32, error) {
	return c.topology.collector.PartitionsFor(topic)
}

// WallClock is the current wall-clock time in milliseconds (the test driver's mock clock
// under `stoatflow test`).
func (c *Context) WallClock() int64 { return c.topology.clock() }

// store returns the partition of a state store that the record being processed belongs to.
func (c *Context) store(name string, partition int32) (*KeyValueStore, error) {
	return c.topology.Store(name, partition)
}

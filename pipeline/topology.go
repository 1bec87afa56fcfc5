package pipeline

import (
	"errors"
	"fmt"
	"time"
)

// RecordCollector receives what sinks write. The agent implements it with a Kafka producer,
// the test driver with in-memory topics.
type RecordCollector interface {
	Send(topic string, partition int32, key, value []byte, headers Headers, timestampMs int64) error
	// PartitionsFor returns the partition count of a topic.
	PartitionsFor(topic string) (int32, error)
}

// Counter is the part of a metric counter the engine uses.
type Counter interface{ Inc() }

// Sensors hands out the counters the engine increments. Counters are fetched once per node
// at build time, never per record.
type Sensors interface {
	Processed(node string) Counter
	Dropped(reason string) Counter
}

// TopologyOptions are what a built topology needs from whoever runs it.
type TopologyOptions struct {
	Collector RecordCollector
	Sensors   Sensors // nil: nothing is counted
	Clock     func() int64
	// SourcePartitions is the partition count of each source topic.
	SourcePartitions map[string]int32
}

// Topology is the runtime form of a built graph: processors wired to their children.
type Topology struct {
	sources             map[string]*runtimeNode
	nodes               []*runtimeNode
	collector           RecordCollector
	sensors             Sensors
	clock               func() int64
	maxSourcePartitions int32
}

type runtimeNode struct {
	name      string
	proc      Processor
	children  []*runtimeNode
	processed Counter
	ctx       *Context
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
	if err := n.proc.Process(rec); err != nil {
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
	if len(b.sourceTopics) == 0 {
		return nil, errors.New("the topology has no source: call stream(...) on the builder")
	}
	t := &Topology{
		sources:   map[string]*runtimeNode{},
		collector: opts.Collector,
		sensors:   opts.Sensors,
		clock:     opts.Clock,
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
	byNode := map[*Node]*runtimeNode{}
	for _, n := range b.nodes {
		rn := &runtimeNode{name: n.Name, processed: t.sensors.Processed(n.Name)}
		switch n.Kind {
		case SourceNode:
			if n.Internal {
				rn.proc = &passThrough{}
			} else {
				rn.proc = &sourceProc{spec: n.source}
			}
		case SinkNode:
			if n.sink.repartitionTo != nil {
				rn.proc = &repartitionSink{spec: n.sink}
			} else {
				rn.proc = &sinkProc{spec: n.sink}
			}
		default:
			rn.proc = n.factory()
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
		}
		if n.Kind == SourceNode && !n.Internal {
			for _, topic := range n.Topics {
				t.sources[topic] = rn
			}
		}
	}
	for _, rn := range t.nodes {
		rn.ctx = &Context{node: rn, topology: t}
		if err := rn.proc.Init(rn.ctx); err != nil {
			return nil, &NodeError{Node: rn.name, Err: err}
		}
	}
	return t, nil
}

// SourceRecord is a record as it arrives from a source topic, still in bytes.
type SourceRecord struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp int64
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

// Process runs one source record through the topology.
func (t *Topology) Process(in SourceRecord) error {
	src, ok := t.sources[in.Topic]
	if !ok {
		return &RecordError{Topic: in.Topic, Partition: in.Partition, Offset: in.Offset,
			Err: errors.New("no source in this topology reads this topic")}
	}
	sp := src.proc.(*sourceProc)
	rec, keep, err := sp.decode(src.ctx, in)
	if err == nil && keep {
		err = src.process(rec)
	}
	if err != nil {
		return &RecordError{Topic: in.Topic, Partition: in.Partition, Offset: in.Offset, Err: err}
	}
	return nil
}

type noSensors struct{}

func (noSensors) Processed(string) Counter { return nopCounter{} }
func (noSensors) Dropped(string) Counter   { return nopCounter{} }

type nopCounter struct{}

func (nopCounter) Inc() {}

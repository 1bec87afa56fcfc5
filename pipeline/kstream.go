package pipeline

import (
	"fmt"
	"io"
)

// KStream is the builder-side handle of a record stream (Kafka Streams' KStream).
type KStream struct {
	b    *StreamsBuilder
	node *Node
	// serdes are the serdes known for this stream's key and value; nil means the default.
	serdes Serdes
	// keyChanged records that the key may differ from the source's partitioning key, so a
	// later stateful operation must repartition (Kafka Streams' repartitionRequired).
	keyChanged bool
	// joinRepartition is the source of the repartition a join of this stream added.
	joinRepartition *Node
}

// Node returns the graph node that produces this stream.
func (s *KStream) Node() *Node { return s.node }

// Builder returns the builder the stream belongs to.
func (s *KStream) Builder() *StreamsBuilder { return s.b }

func (s *KStream) processor(prefix, name string, factory func() Processor) (*Node, error) {
	n, err := s.b.addNode(&Node{Name: s.b.newName(prefix, name), Kind: ProcessorNode, factory: factory})
	if err != nil {
		return nil, err
	}
	s.node.addChild(n)
	return n, nil
}

func (s *KStream) derive(n *Node, serdes Serdes, keyChanged bool) *KStream {
	n.valueSerde = serdes.Value
	return &KStream{b: s.b, node: n, serdes: serdes, keyChanged: keyChanged}
}

// Filter keeps the records for which pred is true.
func (s *KStream) Filter(pred Predicate, name string) (*KStream, error) {
	return s.filter(pred, false, name)
}

// FilterNot keeps the records for which pred is false.
func (s *KStream) FilterNot(pred Predicate, name string) (*KStream, error) {
	return s.filter(pred, true, name)
}

func (s *KStream) filter(pred Predicate, not bool, name string) (*KStream, error) {
	n, err := s.processor("KSTREAM-FILTER-", name, func() Processor { return &filterProc{pred: pred, not: not} })
	if err != nil {
		return nil, err
	}
	return s.derive(n, s.serdes, s.keyChanged), nil
}

// SelectKey replaces the key.
func (s *KStream) SelectKey(fn ValueMapper, name string) (*KStream, error) {
	n, err := s.processor("KSTREAM-KEY-SELECT-", name, func() Processor { return &selectKeyProc{fn: fn} })
	if err != nil {
		return nil, err
	}
	return s.derive(n, Serdes{Value: s.serdes.Value}, true), nil
}

// Map replaces key and value.
func (s *KStream) Map(fn KeyValueMapper, name string) (*KStream, error) {
	n, err := s.processor("KSTREAM-MAP-", name, func() Processor { return &mapProc{fn: fn} })
	if err != nil {
		return nil, err
	}
	return s.derive(n, Serdes{}, true), nil
}

// MapValues replaces the value.
func (s *KStream) MapValues(fn ValueMapper, name string) (*KStream, error) {
	n, err := s.processor("KSTREAM-MAPVALUES-", name, func() Processor { return &mapValuesProc{fn: fn} })
	if err != nil {
		return nil, err
	}
	return s.derive(n, Serdes{Key: s.serdes.Key}, s.keyChanged), nil
}

// FlatMap replaces each record by zero or more records.
func (s *KStream) FlatMap(fn FlatMapper, name string) (*KStream, error) {
	n, err := s.processor("KSTREAM-FLATMAP-", name, func() Processor { return &flatMapProc{fn: fn} })
	if err != nil {
		return nil, err
	}
	return s.derive(n, Serdes{}, true), nil
}

// FlatMapValues replaces each value by zero or more values under the same key.
func (s *KStream) FlatMapValues(fn FlatValueMapper, name string) (*KStream, error) {
	n, err := s.processor("KSTREAM-FLATMAPVALUES-", name, func() Processor { return &flatMapValuesProc{fn: fn} })
	if err != nil {
		return nil, err
	}
	return s.derive(n, Serdes{Key: s.serdes.Key}, s.keyChanged), nil
}

// Peek calls fn for each record and forwards the record unchanged.
func (s *KStream) Peek(fn ForeachAction, name string) (*KStream, error) {
	n, err := s.processor("KSTREAM-PEEK-", name, func() Processor { return &peekProc{fn: fn, forward: true} })
	if err != nil {
		return nil, err
	}
	return s.derive(n, s.serdes, s.keyChanged), nil
}

// Foreach calls fn for each record; it is a terminal operation.
func (s *KStream) Foreach(fn ForeachAction, name string) error {
	_, err := s.processor("KSTREAM-FOREACH-", name, func() Processor { return &peekProc{fn: fn} })
	return err
}

// Print writes each record as "[label]: key, value" to w (Kafka Streams' Printed); format
// renders a key or value. The label defaults to the processor name.
func (s *KStream) Print(w io.Writer, label string, format func(any) string, name string) error {
	var n *Node
	n, err := s.processor("KSTREAM-PRINTER-", name, func() Processor {
		l := label
		if l == "" {
			l = n.Name
		}
		return &printProc{w: w, label: l, format: format}
	})
	return err
}

// Merge unions this stream with other.
func (s *KStream) Merge(other *KStream, name string) (*KStream, error) {
	if other == nil || other.b != s.b {
		return nil, fmt.Errorf("merge: the other stream must come from the same builder")
	}
	n, err := s.processor("KSTREAM-MERGE-", name, func() Processor { return &passThrough{} })
	if err != nil {
		return nil, err
	}
	other.node.addChild(n)
	return s.derive(n, Serdes{}, s.keyChanged || other.keyChanged), nil
}

// Produced configures a sink (Kafka Streams' Produced).
type Produced struct {
	Name        string
	Serdes      Serdes
	Partitioner StreamPartitioner
	// ExtractorName is how describe() names a topic extractor.
	ExtractorName string
}

// To writes the stream to a fixed topic.
func (s *KStream) To(topic string, p Produced) error {
	if topic == "" {
		return fmt.Errorf("to: empty topic name")
	}
	return s.to(topic, nil, p)
}

// ToExtractor writes each record to the topic chosen by extractor.
func (s *KStream) ToExtractor(extractor TopicNameExtractor, p Produced) error {
	if extractor == nil {
		return fmt.Errorf("to: no topic and no topic extractor")
	}
	return s.to("", extractor, p)
}

func (s *KStream) to(topic string, extractor TopicNameExtractor, p Produced) error {
	serdes := p.Serdes
	if serdes.Key == nil {
		serdes.Key = s.serdes.Key
	}
	if serdes.Value == nil {
		serdes.Value = s.serdes.Value
	}
	n, err := s.b.addNode(&Node{
		Name:  s.b.newName("KSTREAM-SINK-", p.Name),
		Kind:  SinkNode,
		Topic: topic,
		sink: &sinkSpec{
			topic:         topic,
			extractor:     extractor,
			serdes:        s.b.orDefaults(serdes),
			partitioner:   p.Partitioner,
			extractorName: p.ExtractorName,
		},
	})
	if err != nil {
		return err
	}
	s.node.addChild(n)
	return nil
}

// Split starts a branching (Kafka Streams' split()).
func (s *KStream) Split(name string) (*BranchedKStream, error) {
	n, err := s.b.addNode(&Node{Name: s.b.newName("KSTREAM-BRANCH-", name), Kind: ProcessorNode})
	if err != nil {
		return nil, err
	}
	bs := &BranchedKStream{parent: s, node: n}
	n.factory = func() Processor { return &branchProc{bs: bs} }
	s.node.addChild(n)
	return bs, nil
}

// BranchedKStream collects branches; predicates are tried in declaration order and the first
// match takes the record.
type BranchedKStream struct {
	parent     *KStream
	node       *Node
	branches   []branch
	defaulted  bool
	terminated bool
}

type branch struct {
	pred  Predicate // nil for the default branch
	child string
}

// Branch adds a branch; name is the Branched name ("" → its 1-based position). It returns the
// branch's stream and its full name (splitter name + branch name).
func (bs *BranchedKStream) Branch(pred Predicate, name string) (*KStream, string, error) {
	if pred == nil {
		return nil, "", fmt.Errorf("branch needs a predicate")
	}
	return bs.add(pred, name)
}

// DefaultBranch adds the branch for records no predicate matched and ends the branching.
func (bs *BranchedKStream) DefaultBranch(name string) (*KStream, string, error) {
	ks, full, err := bs.add(nil, name)
	if err == nil {
		bs.defaulted = true
		bs.terminated = true
	}
	return ks, full, err
}

// NoDefaultBranch ends the branching; records no predicate matched are dropped.
func (bs *BranchedKStream) NoDefaultBranch() error {
	if bs.terminated {
		return fmt.Errorf("split %s is already closed", bs.node.Name)
	}
	bs.terminated = true
	return nil
}

func (bs *BranchedKStream) add(pred Predicate, name string) (*KStream, string, error) {
	if bs.terminated {
		return nil, "", fmt.Errorf("split %s is already closed by defaultBranch or noDefaultBranch", bs.node.Name)
	}
	suffix := name
	if suffix == "" {
		if pred == nil {
			suffix = "0"
		} else {
			suffix = fmt.Sprint(len(bs.branches) + 1)
		}
	}
	b := bs.parent.b
	full := bs.node.Name + suffix
	b.index++ // every branch consumes one index, named or not
	n, err := b.addNode(&Node{Name: full, Kind: ProcessorNode, factory: func() Processor { return &passThrough{} }})
	if err != nil {
		return nil, "", err
	}
	bs.node.addChild(n)
	bs.branches = append(bs.branches, branch{pred: pred, child: full})
	return bs.parent.derive(n, bs.parent.serdes, bs.parent.keyChanged), full, nil
}

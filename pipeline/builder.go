package pipeline

import (
	"fmt"
	"sort"
)

// StreamsBuilder builds a topology graph the way Kafka Streams' StreamsBuilder does: every
// generated processor and store name takes the next value of one counter, so names (and
// therefore `describe` output, store names and internal topics) match Kafka Streams.
type StreamsBuilder struct {
	index        int
	nodes        []*Node
	sourceTopics map[string]*Node
	// patternSources are the sources subscribed by pattern (pattern.go), in creation order.
	patternSources []*Node
	stores         map[string]*StoreSpec
	defaults       Serdes
	// copartitionGroups are the inputs of each join by key (copartition.go).
	copartitionGroups [][]*Node
}

// Serdes is a key serde and a value serde.
type Serdes struct {
	Key   Serde
	Value Serde
}

// NewStreamsBuilder returns an empty builder; defaults are the serdes used where an
// operation names none (`default.key.serde`, `default.value.serde`).
func NewStreamsBuilder(defaults Serdes) *StreamsBuilder {
	return &StreamsBuilder{sourceTopics: map[string]*Node{}, stores: map[string]*StoreSpec{}, defaults: defaults}
}

// newName takes the next counter value for a generated name with the given prefix, or
// returns the user's name; a user name still consumes the index (Kafka's NamedInternal).
func (b *StreamsBuilder) newName(prefix, userName string) string {
	i := b.index
	b.index++
	if userName != "" {
		return userName
	}
	return fmt.Sprintf("%s%010d", prefix, i)
}

func (b *StreamsBuilder) addNode(n *Node) (*Node, error) {
	if err := checkNodeNames(n); err != nil {
		return nil, err
	}
	for _, o := range b.nodes {
		if o.Name == n.Name {
			return nil, fmt.Errorf("processor name %q is already used in this topology", n.Name)
		}
	}
	b.nodes = append(b.nodes, n)
	return n, nil
}

// Consumed configures a source (Kafka Streams' Consumed).
type Consumed struct {
	Name               string
	Serdes             Serdes
	TimestampExtractor TimestampExtractor // nil: the record's own timestamp
	// OffsetReset is where the source's partitions without a committed offset start
	// (Consumed.withOffsetResetPolicy); the zero value leaves it to auto.offset.reset.
	OffsetReset OffsetReset
}

// OffsetResetOf is the reset policy of a source topic's own, ResetDefault when its source
// has none.
func (b *StreamsBuilder) OffsetResetOf(topic string) OffsetReset {
	if n := b.sourceOf(topic); n != nil && n.source != nil {
		return n.source.reset
	}
	return OffsetReset{}
}

// TimestampExtractor returns the event time of a record in milliseconds.
type TimestampExtractor func(rec Record) (int64, error)

// Stream subscribes to one or more topics.
func (b *StreamsBuilder) Stream(topics []string, c Consumed) (*KStream, error) {
	if len(topics) == 0 {
		return nil, fmt.Errorf("stream needs at least one topic")
	}
	for _, t := range topics {
		if t == "" {
			return nil, fmt.Errorf("stream: empty topic name")
		}
		if _, dup := b.sourceTopics[t]; dup {
			return nil, fmt.Errorf("topic %q is already a source of this topology (Kafka Streams allows one source per topic)", t)
		}
	}
	serdes := b.orDefaults(c.Serdes)
	n, err := b.addNode(&Node{
		Name:   b.newName("KSTREAM-SOURCE-", c.Name),
		Kind:   SourceNode,
		Topics: append([]string(nil), topics...),
		source: &sourceSpec{serdes: serdes, extractor: c.TimestampExtractor, reset: c.OffsetReset},
	})
	if err != nil {
		return nil, err
	}
	for _, t := range topics {
		b.sourceTopics[t] = n
	}
	n.valueSerde = serdes.Value
	return &KStream{b: b, node: n, serdes: serdes}, nil
}

func (b *StreamsBuilder) orDefaults(s Serdes) Serdes {
	if s.Key == nil {
		s.Key = b.defaults.Key
	}
	if s.Value == nil {
		s.Value = b.defaults.Value
	}
	return s
}

// SourceTopics lists the topics the topology reads, sorted.
func (b *StreamsBuilder) SourceTopics() []string {
	out := make([]string, 0, len(b.sourceTopics))
	for t := range b.sourceTopics {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// SourceNode is the name of the source node that reads topic, "" when none does.
func (b *StreamsBuilder) SourceNode(topic string) string {
	if n, ok := b.sourceTopics[topic]; ok {
		return n.Name
	}
	return ""
}

// SinkTopics lists the fixed topics the topology writes, sorted. Topics chosen at run time by
// a topic extractor are not known here.
func (b *StreamsBuilder) SinkTopics() []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range b.nodes {
		if n.Kind == SinkNode && !n.Internal && n.Topic != "" && !seen[n.Topic] {
			seen[n.Topic] = true
			out = append(out, n.Topic)
		}
	}
	sort.Strings(out)
	return out
}

// Nodes returns the graph's nodes in creation order.
func (b *StreamsBuilder) Nodes() []*Node { return b.nodes }

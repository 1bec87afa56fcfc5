package pipeline

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
)

// StreamPattern subscribes to every topic whose whole name matches pattern, as
// StreamsBuilder#stream(Pattern) does: the topics there are when the application starts and
// those created later (whoever runs the topology looks again at every metadata refresh). The
// pattern is Go's RE2 syntax, which shares Java's for everything but backreferences and
// lookaround.
func (b *StreamsBuilder) StreamPattern(pattern string, c Consumed) (*KStream, error) {
	if pattern == "" {
		return nil, fmt.Errorf("stream: empty topic pattern")
	}
	re, err := regexp.Compile(`^(?:` + pattern + `)$`)
	if err != nil {
		return nil, fmt.Errorf("stream: topic pattern %q: %v", pattern, err)
	}
	for _, n := range b.patternSources {
		if n.Pattern == pattern {
			return nil, fmt.Errorf("topic pattern %q is already a source of this topology", pattern)
		}
	}
	serdes := b.orDefaults(c.Serdes)
	n, err := b.addNode(&Node{
		Name:    b.newName("KSTREAM-SOURCE-", c.Name),
		Kind:    SourceNode,
		Pattern: pattern,
		source:  &sourceSpec{serdes: serdes, extractor: c.TimestampExtractor, reset: c.OffsetReset, pattern: re},
	})
	if err != nil {
		return nil, err
	}
	b.patternSources = append(b.patternSources, n)
	n.valueSerde = serdes.Value
	return &KStream{b: b, node: n, serdes: serdes}, nil
}

// HasPatternSources reports whether a source subscribes by pattern, so the topics read
// depend on the cluster's.
func (b *StreamsBuilder) HasPatternSources() bool { return len(b.patternSources) > 0 }

// Subscription is the topics the topology reads out of the cluster's topics: the named
// sources' and those a pattern matches, sorted. A topic two sources would read is an error,
// as Kafka Streams' TopologyException.
func (b *StreamsBuilder) Subscription(clusterTopics []string) ([]string, error) {
	out := b.SourceTopics()
	for _, topic := range clusterTopics {
		var by *Node
		for _, n := range b.patternSources {
			if !n.source.pattern.MatchString(topic) {
				continue
			}
			if named, ok := b.sourceTopics[topic]; ok {
				return nil, topologyError("Topic %s is a source of %s and matches the pattern %s of %s: a topic can be read by one source only", topic, named.Name, n.Pattern, n.Name)
			}
			if by != nil {
				return nil, topologyError("Topic %s matches the patterns %s of %s and %s of %s: a topic can be read by one source only", topic, by.Pattern, by.Name, n.Pattern, n.Name)
			}
			by = n
		}
		if by != nil && !slices.Contains(out, topic) {
			out = append(out, topic)
		}
	}
	sort.Strings(out)
	return out, nil
}

// sourceOf is the source that reads topic, nil if none does.
func (b *StreamsBuilder) sourceOf(topic string) *Node {
	if n, ok := b.sourceTopics[topic]; ok {
		return n
	}
	for _, n := range b.patternSources {
		if n.source.pattern.MatchString(topic) {
			return n
		}
	}
	return nil
}

// topicsRead is the topics source n reads among the known ones: its own, or for a pattern
// source the known topics it matches, sorted.
func (n *Node) topicsRead(known map[string]int32) []string {
	if n.source == nil || n.source.pattern == nil {
		return n.Topics
	}
	var out []string
	for topic := range known {
		if n.source.pattern.MatchString(topic) {
			out = append(out, topic)
		}
	}
	sort.Strings(out)
	return out
}

// patternSource is a running pattern source.
type patternSource struct {
	re   *regexp.Regexp
	node *runtimeNode
}

package pipeline

import (
	"fmt"
	"sort"
	"strings"
)

// copartition records that the streams and tables produced by nodes are joined by key, so
// their source topics must be co-partitioned (Kafka Streams' ensureCopartitionWith).
func (b *StreamsBuilder) copartition(nodes ...*Node) {
	b.copartitionGroups = append(b.copartitionGroups, nodes)
}

// upstreamSources are the source nodes a node's records come from within its
// sub-topology (Kafka Streams' subTopologySourceNodes): its ancestors without parents.
func upstreamSources(n *Node) []*Node {
	seen := map[*Node]bool{}
	var out []*Node
	var walk func(n *Node)
	walk = func(n *Node) {
		if seen[n] {
			return
		}
		seen[n] = true
		if n.Kind == SourceNode {
			out = append(out, n)
		}
		for _, p := range n.Parents {
			walk(p)
		}
	}
	walk(n)
	return out
}

// repartitionCounts gives each repartition topic the partition count Kafka Streams gives
// it: the one it was configured with (Repartitioned#withNumberOfPartitions), else the
// largest partition count of the source topics, and then, for the topics of a join, what
// CopartitionedTopicsEnforcer decides: the joined source topics must have one partition
// count, which the repartition topics among them take; when every topic of the join is a
// repartition topic, they take the largest of their counts. Kafka Streams' errors become
// errors here, naming the topics.
func (b *StreamsBuilder) repartitionCounts(sourcePartitions map[string]int32, maxSource int32) (map[string]int32, error) {
	counts := map[string]int32{}
	enforced := map[string]bool{}
	for _, n := range b.nodes {
		if n.Kind == SinkNode && n.sink.repartitionTo != nil {
			counts[n.Topic] = maxSource
			if n.sink.partitions > 0 {
				counts[n.Topic], enforced[n.Topic] = n.sink.partitions, true
			}
		}
	}
	for _, group := range b.copartitionGroups {
		internal := map[string]bool{}
		external := map[string]int32{}
		for _, in := range group {
			for _, src := range upstreamSources(in) {
				for _, topic := range src.topicsRead(sourcePartitions) {
					if src.Internal {
						internal[topic] = true
					} else {
						external[topic] = sourcePartitions[topic]
					}
				}
			}
		}
		if len(internal) == 0 {
			if _, err := samePartitions(external); err != nil {
				return nil, err
			}
			continue
		}
		var use int32
		if len(external) == 0 {
			var fixed []string
			for topic := range internal {
				if enforced[topic] {
					fixed = append(fixed, topic)
				}
			}
			sort.Strings(fixed)
			for _, topic := range fixed {
				if counts[topic] != counts[fixed[0]] {
					parts := make([]string, len(fixed))
					for i, t := range fixed {
						parts[i] = fmt.Sprintf("%s=%d", t, counts[t])
					}
					return nil, topologyError("Following topics do not have the same number of partitions: [{%s}]", strings.Join(parts, ", "))
				}
			}
			if len(fixed) > 0 {
				use = counts[fixed[0]]
			} else {
				for topic := range internal {
					use = max(use, counts[topic])
				}
			}
		} else {
			n, err := samePartitions(external)
			if err != nil {
				return nil, err
			}
			use = n
		}
		for topic := range internal {
			if !enforced[topic] {
				counts[topic] = use
			}
			if counts[topic] != use {
				return nil, topologyError("Number of partitions [%d] of repartition topic [%s] doesn't match number of partitions [%d] of the source topic.", counts[topic], topic, use)
			}
		}
	}
	return counts, nil
}

// samePartitions is the one partition count of joined source topics, or Kafka Streams'
// "Topics not co-partitioned" error listing each topic's count.
func samePartitions(topics map[string]int32) (int32, error) {
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		if topics[t] != topics[names[0]] {
			parts := make([]string, len(names))
			for i, n := range names {
				parts[i] = fmt.Sprintf("%s=%d", n, topics[n])
			}
			return 0, topologyError("Topics not co-partitioned: [{%s}]", strings.Join(parts, ", "))
		}
	}
	if len(names) == 0 {
		return 0, nil
	}
	return topics[names[0]], nil
}

// TopologyError is Kafka Streams' TopologyException: a topology that cannot run, its
// message as Kafka Streams words it.
type TopologyError struct{ Message string }

func (e *TopologyError) Error() string { return "Invalid topology: " + e.Message }

func topologyError(format string, args ...any) error {
	return &TopologyError{Message: fmt.Sprintf(format, args...)}
}

// kafkaMessage is an error worded exactly as Kafka Streams words it.
type kafkaMessage string

func (e kafkaMessage) Error() string { return string(e) }

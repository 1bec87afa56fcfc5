package pipeline

import (
	"slices"
	"sort"
)

// SubtopologyTopics is what Kafka Streams' InternalTopologyBuilder#subtopologyToTopicsInfo
// says of one sub-topology (global ones have none): the topics its tasks read and write and
// the changelogs of its stores, internal topics named as Kafka Streams decorates them with
// the application id. It is the part of the topology a streams-group member declares
// (KIP-1071): read only, it changes nothing of the graph.
type SubtopologyTopics struct {
	// ID is the sub-topology's id, as describe() prints it.
	ID int
	// SourceTopics are the topics its sources read, but repartition topics; sorted.
	SourceTopics []string
	// SourcePatterns are the regexes of its pattern sources, as written; sorted.
	SourcePatterns []string
	// RepartitionSources are the repartition topics it reads, sorted by name.
	RepartitionSources []RepartitionTopic
	// RepartitionSinks are the repartition topics it writes, sorted.
	RepartitionSinks []string
	// Changelogs are the changelog topics of its logged stores, sorted by name.
	Changelogs []StoreChangelog
	// Stores are the names of every store its processors use, logged or not, sorted: the
	// store partitions its tasks hold (interactive queries across agents ask which agent
	// runs the task of a store partition).
	Stores []string
	// CopartitionGroups are the sets of its source topics (repartition topics included)
	// that joins require to be co-partitioned, each set and the list in the order Kafka
	// Streams iterates them (java.util.HashSet's): a broker compares a declaration with
	// another member's field by field, order included.
	CopartitionGroups [][]string
}

// RepartitionTopic is a repartition topic a sub-topology reads.
type RepartitionTopic struct {
	Name string
	// Partitions is the count it was given (Repartitioned#withNumberOfPartitions), 0 when
	// whoever creates it decides.
	Partitions int32
}

// StoreChangelog is the changelog topic of a logged store.
type StoreChangelog struct {
	Name  string
	Store StoreSpec
}

// SubtopologyTopics lists the topics of every sub-topology but the global ones, by id, for
// the application appID.
func (b *StreamsBuilder) SubtopologyTopics(appID string) []SubtopologyTopics {
	decorate := func(n *Node, topic string) string {
		if n.Internal {
			return appID + "-" + topic
		}
		return topic
	}
	global := map[*Node]bool{}
	for _, n := range b.globalSources() {
		global[n] = true
	}
	// Kafka Streams' copartitionGroups(): the topic sets first, then each sub-topology takes
	// the groups whose topics it reads.
	groups := b.copartitionTopicSets(decorate)
	allRepartition := map[string]bool{}
	for _, n := range b.nodes {
		if n.Kind == SourceNode && n.Internal {
			for _, t := range n.Topics {
				allRepartition[decorate(n, t)] = true
			}
		}
	}
	var out []SubtopologyTopics
	for id, members := range b.subtopologies() {
		if globalMember(members, global) != nil {
			continue
		}
		st := SubtopologyTopics{ID: id}
		reads := map[string]bool{}
		stores := map[string]bool{}
		for _, n := range members {
			switch n.Kind {
			case SourceNode:
				if n.Pattern != "" {
					st.SourcePatterns = append(st.SourcePatterns, n.Pattern)
					continue
				}
				for _, t := range n.Topics {
					topic := decorate(n, t)
					reads[topic] = true
					if n.Internal {
						st.RepartitionSources = append(st.RepartitionSources, RepartitionTopic{Name: topic, Partitions: b.fixedPartitions(t)})
					} else {
						st.SourceTopics = append(st.SourceTopics, topic)
					}
				}
			case SinkNode:
				if topic := decorate(n, n.Topic); n.Topic != "" && allRepartition[topic] && !slices.Contains(st.RepartitionSinks, topic) {
					st.RepartitionSinks = append(st.RepartitionSinks, topic)
				}
			default:
				for _, s := range n.Stores {
					stores[s] = true
				}
			}
		}
		for name := range stores {
			st.Stores = append(st.Stores, name)
			if spec, ok := b.stores[name]; ok && spec.Logged {
				st.Changelogs = append(st.Changelogs, StoreChangelog{Name: ChangelogTopic(appID, name), Store: *spec})
			}
		}
		sort.Strings(st.Stores)
		sort.Strings(st.SourceTopics)
		sort.Strings(st.SourcePatterns)
		sort.Strings(st.RepartitionSinks)
		sort.Slice(st.RepartitionSources, func(i, j int) bool { return st.RepartitionSources[i].Name < st.RepartitionSources[j].Name })
		sort.Slice(st.Changelogs, func(i, j int) bool { return st.Changelogs[i].Name < st.Changelogs[j].Name })
		for _, g := range groups {
			if containsAll(reads, g) {
				st.CopartitionGroups = append(st.CopartitionGroups, g)
			}
		}
		out = append(out, st)
	}
	return out
}

// fixedPartitions is the partition count a repartition topic was given, 0 if none.
func (b *StreamsBuilder) fixedPartitions(topic string) int32 {
	for _, n := range b.nodes {
		if n.Kind == SinkNode && n.sink != nil && n.sink.repartitionTo != nil && n.Topic == topic {
			return n.sink.partitions
		}
	}
	return 0
}

func containsAll(set map[string]bool, topics []string) bool {
	for _, t := range topics {
		if !set[t] {
			return false
		}
	}
	return true
}

// copartitionTopicSets is InternalTopologyBuilder#copartitionGroups: each join's source
// topics as a set; a set sharing a topic with an earlier one is merged into the first such
// set found; the distinct sets then go through a HashSet, which orders them.
func (b *StreamsBuilder) copartitionTopicSets(decorate func(*Node, string) string) [][]string {
	type set struct{ topics []string } // in the set's insertion order
	byTopic := map[string]*set{}
	var order []string // byTopic's keys in insertion order (a LinkedHashMap)
	for _, group := range b.copartitionGroups {
		// The group's source nodes, and their topics, as Kafka Streams collects them.
		var names []string
		byName := map[string]*Node{}
		for _, in := range group {
			for _, src := range upstreamSources(in) {
				if _, ok := byName[src.Name]; !ok {
					byName[src.Name] = src
					names = append(names, src.Name)
				}
			}
		}
		var topics []string
		for _, name := range javaHashSetOrder(names) {
			n := byName[name]
			for _, t := range n.Topics {
				topics = append(topics, decorate(n, t))
			}
		}
		topics = javaHashSetOrder(topics)
		var into *set
		for _, t := range topics {
			if into = byTopic[t]; into != nil {
				break
			}
		}
		if into == nil {
			into = &set{}
		}
		for _, t := range topics {
			if !slices.Contains(into.topics, t) {
				into.topics = append(into.topics, t)
			}
		}
		for _, t := range topics {
			if _, ok := byTopic[t]; !ok {
				order = append(order, t)
			}
			byTopic[t] = into
		}
	}
	// new HashSet<>(map.values()): equal sets once, ordered by their hash (the sum of their
	// topics' hashes) in a table sized for every value.
	var distinct [][]string
	var hashes []int32
	for _, t := range order {
		s := javaHashSetOrder(byTopic[t].topics)
		if slices.ContainsFunc(distinct, func(d []string) bool { return sameSet(d, s) }) {
			continue
		}
		var h int32
		for _, topic := range s {
			h += javaStringHash(topic)
		}
		distinct = append(distinct, s)
		hashes = append(hashes, h)
	}
	capacity := javaTableSize(len(order))
	idx := make([]int, len(distinct))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool {
		return javaBucket(hashes[idx[i]], capacity) < javaBucket(hashes[idx[j]], capacity)
	})
	out := make([][]string, len(idx))
	for i, k := range idx {
		out[i] = distinct[k]
	}
	return out
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// javaTableSize is the table size of java.util.HashSet(Collection) for n elements.
func javaTableSize(n int) int {
	capacity := 16
	for capacity < n*4/3+1 {
		capacity <<= 1
	}
	return capacity
}

// javaBucket is the bucket of a hash in a java.util.HashMap table of the given size.
func javaBucket(h int32, capacity int) int {
	h ^= int32(uint32(h) >> 16)
	return int(h) & (capacity - 1)
}

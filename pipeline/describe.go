package pipeline

import (
	"sort"
	"strings"
)

// TopologyDescription is Kafka Streams' TopologyDescription of a built graph: its
// sub-topologies and global stores. Repartition topics that StoatFlow keeps in
// memory still split sub-topologies exactly where Kafka Streams would.
type TopologyDescription struct {
	Subtopologies []Subtopology `json:"subtopologies"`
	GlobalStores  []GlobalStore `json:"globalStores"`
}

// Subtopology is one connected part of the topology.
type Subtopology struct {
	ID    int             `json:"id"`
	Nodes []DescribedNode `json:"nodes"`
}

// GlobalStore describes a global store's source and processor.
type GlobalStore struct {
	ID        int           `json:"id"`
	Source    DescribedNode `json:"source"`
	Processor DescribedNode `json:"processor"`
}

// DescribedNode is one node as describe() shows it.
type DescribedNode struct {
	Type         string   `json:"type"` // "source", "processor" or "sink"
	Name         string   `json:"name"`
	Topics       []string `json:"topics,omitempty"`       // sources, in Kafka Streams' print order
	TopicPattern string   `json:"topicPattern,omitempty"` // pattern sources
	Topic        string   `json:"topic,omitempty"`        // sinks with a fixed topic
	Extractor    string   `json:"extractor,omitempty"`    // sinks with a topic extractor
	Stores       []string `json:"stores,omitempty"`       // processors, in Kafka Streams' print order
	// ReadsGlobal are the global stores a processor reads, which describe() does not print
	// (Kafka Streams connects no processor to a global store) but a drawing shows.
	ReadsGlobal  []string `json:"readsGlobal,omitempty"`
	Internal     bool     `json:"internal,omitempty"` // kept in memory by StoatFlow
	Successors   []string `json:"successors"`
	Predecessors []string `json:"predecessors"`
}

// Describe returns the topology description of the graph built so far.
func (b *StreamsBuilder) Describe() *TopologyDescription {
	groups := b.subtopologies()
	d := &TopologyDescription{Subtopologies: []Subtopology{}, GlobalStores: []GlobalStore{}}
	global := map[*Node]bool{}
	for _, n := range b.globalSources() {
		global[n] = true
	}
	for id, members := range groups {
		if src := globalMember(members, global); src != nil {
			proc := src.Children[0]
			d.GlobalStores = append(d.GlobalStores, GlobalStore{ID: id,
				Source: describeNode(src, src.Children, nil), Processor: describeNode(proc, nil, proc.Parents)})
			continue
		}
		in := map[*Node]bool{}
		for _, n := range members {
			in[n] = true
		}
		size := map[*Node]int{}
		var sizeOf func(n *Node) int
		sizeOf = func(n *Node) int {
			if s, ok := size[n]; ok {
				return s
			}
			s := 1
			for _, c := range n.Children {
				if in[c] {
					s += sizeOf(c)
				}
			}
			size[n] = s
			return s
		}
		order := func(nodes []*Node) []*Node {
			out := append([]*Node(nil), nodes...)
			sort.SliceStable(out, func(i, j int) bool {
				si, sj := sizeOf(out[i]), sizeOf(out[j])
				if si != sj {
					return si > sj
				}
				return out[i].Name < out[j].Name
			})
			return out
		}
		succ, pred := linkOrders(members)
		st := Subtopology{ID: id}
		for _, n := range order(members) {
			st.Nodes = append(st.Nodes, describeNode(n, succ[n], pred[n]))
		}
		d.Subtopologies = append(d.Subtopologies, st)
	}
	return d
}

// globalMember returns the global source of a node group, nil for a sub-topology.
func globalMember(members []*Node, global map[*Node]bool) *Node {
	for _, n := range members {
		if global[n] {
			return n
		}
	}
	return nil
}

// describeNode describes n with its successors and predecessors in print order.
func describeNode(n *Node, successors, predecessors []*Node) DescribedNode {
	names := func(nodes []*Node) []string {
		out := []string{}
		for _, x := range nodes {
			out = append(out, x.Name)
		}
		return out
	}
	dn := DescribedNode{Name: n.Name, Internal: n.Internal, Successors: names(successors), Predecessors: names(predecessors)}
	switch n.Kind {
	case SourceNode:
		dn.Type = "source"
		if n.Pattern != "" {
			dn.TopicPattern = n.Pattern
		} else {
			dn.Topics = javaHashSetOrder(n.Topics)
		}
		dn.Predecessors = []string{}
	case SinkNode:
		dn.Type = "sink"
		dn.Successors = []string{}
		if n.sink.extractor != nil {
			dn.Extractor = n.sink.extractorName
		} else {
			dn.Topic = n.Topic
		}
	default:
		dn.Type = "processor"
		dn.ReadsGlobal = n.ReadsGlobal
		dn.Stores = javaHashSetOrder(n.Stores)
		if dn.Stores == nil {
			dn.Stores = []string{}
		}
	}
	return dn
}

// subtopologies groups the nodes as Kafka Streams' makeNodeGroups does: nodes connected by
// parent/child edges (and processors sharing a store) form one group; group ids are given
// walking the nodes in the order they were added, which is the order Kafka Streams writes
// them to its topology (upstream groups first, KAFKA-9020).
func (b *StreamsBuilder) subtopologies() [][]*Node {
	parent := map[*Node]*Node{}
	var find func(n *Node) *Node
	find = func(n *Node) *Node {
		p, ok := parent[n]
		if !ok || p == n {
			parent[n] = n
			return n
		}
		r := find(p)
		parent[n] = r
		return r
	}
	union := func(a, c *Node) { parent[find(a)] = find(c) }
	storeOwner := map[string]*Node{}
	for _, n := range b.nodes {
		find(n)
		for _, c := range n.Children {
			union(c, n)
		}
		for _, s := range n.Stores {
			if o, ok := storeOwner[s]; ok {
				union(n, o)
			} else {
				storeOwner[s] = n
			}
		}
	}
	ids := map[*Node]int{}
	var order []*Node
	for _, n := range b.nodes {
		r := find(n)
		if _, ok := ids[r]; !ok {
			ids[r] = len(order)
			order = append(order, r)
		}
	}
	groups := make([][]*Node, len(order))
	for _, n := range b.nodes {
		id := ids[find(n)]
		groups[id] = append(groups[id], n)
	}
	return groups
}

// String renders the description exactly as Kafka Streams' TopologyDescription#toString.
func (d *TopologyDescription) String() string {
	var sb strings.Builder
	sb.WriteString("Topologies:\n ")
	// Sub-topologies and global stores share ids and are interleaved by id, as
	// TopologyDescription#toString walks them.
	subs, globals := d.Subtopologies, d.GlobalStores
	for expected := 0; len(subs) > 0 && len(globals) > 0; expected++ {
		if subs[0].ID == expected {
			writeSubtopology(&sb, subs[0])
			subs = subs[1:]
		} else {
			writeGlobalStore(&sb, globals[0])
			globals = globals[1:]
		}
	}
	for _, st := range subs {
		writeSubtopology(&sb, st)
	}
	for _, g := range globals {
		writeGlobalStore(&sb, g)
	}
	return sb.String()
}

func writeSubtopology(sb *strings.Builder, st Subtopology) {
	sb.WriteString("  Sub-topology: ")
	sb.WriteString(itoa(st.ID))
	sb.WriteString("\n")
	for _, n := range st.Nodes {
		writeNode(sb, n)
	}
	sb.WriteString("\n")
}

// writeGlobalStore renders a global store block, which has no trailing empty line.
func writeGlobalStore(sb *strings.Builder, g GlobalStore) {
	sb.WriteString("  Sub-topology: " + itoa(g.ID) + " for global store (will not generate tasks)\n")
	writeNode(sb, g.Source)
	writeNode(sb, g.Processor)
}

func writeNode(sb *strings.Builder, n DescribedNode) {
	sb.WriteString("    ")
	switch n.Type {
	case "source":
		if n.TopicPattern != "" {
			// Kafka prints a pattern subscription's Pattern#toString: the regex, no brackets.
			sb.WriteString("Source: " + n.Name + " (topics: " + n.TopicPattern + ")\n")
		} else {
			sb.WriteString("Source: " + n.Name + " (topics: [" + strings.Join(n.Topics, ", ") + "])\n")
		}
		sb.WriteString("      --> " + nodeList(n.Successors) + "\n")
	case "sink":
		if n.Extractor != "" {
			sb.WriteString("Sink: " + n.Name + " (extractor class: " + n.Extractor + ")\n")
		} else {
			sb.WriteString("Sink: " + n.Name + " (topic: " + n.Topic + ")\n")
		}
		sb.WriteString("      <-- " + nodeList(n.Predecessors) + "\n")
	default:
		sb.WriteString("Processor: " + n.Name + " (stores: [" + strings.Join(n.Stores, ", ") + "])\n")
		sb.WriteString("      --> " + nodeList(n.Successors) + "\n")
		sb.WriteString("      <-- " + nodeList(n.Predecessors) + "\n")
	}
}

func nodeList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	p := len(b)
	for i > 0 {
		p--
		b[p] = byte('0' + i%10)
		i /= 10
	}
	return string(b[p:])
}

// javaHashSetOrder returns names in the iteration order of a java.util.HashSet built from
// them in the given order, which is how describe() prints topic and store sets.
func javaHashSetOrder(names []string) []string {
	if len(names) < 2 {
		return append([]string(nil), names...)
	}
	capacity := 16
	for capacity < len(names)*4/3+1 {
		capacity <<= 1
	}
	type entry struct {
		bucket int
		pos    int
		name   string
	}
	var entries []entry
	seen := map[string]bool{}
	for i, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		h := javaStringHash(n)
		h ^= int32(uint32(h) >> 16)
		entries = append(entries, entry{bucket: int(h) & (capacity - 1), pos: i, name: n})
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].bucket < entries[j].bucket })
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.name
	}
	return out
}

// javaStringHash is java.lang.String#hashCode over UTF-16 code units.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

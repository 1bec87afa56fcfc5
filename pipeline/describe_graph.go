package pipeline

import (
	"fmt"
	"slices"
	"strings"
)

// NodeNames lists every node of the description: the sub-topologies' in order, then the
// global stores' sources and processors.
func (d *TopologyDescription) NodeNames() []string {
	var out []string
	for _, st := range d.Subtopologies {
		for _, n := range st.Nodes {
			out = append(out, n.Name)
		}
	}
	for _, g := range d.GlobalStores {
		out = append(out, g.Source.Name, g.Processor.Name)
	}
	return out
}

// graphView is the description as a drawing sees it: boxes in groups (sub-topologies,
// global stores), topics and stores, and the arrows between them.
type graphView struct {
	groups []graphGroup
	topics []string // Kafka topics, in order of appearance
	stores []string
	edges  []graphEdge
}

type graphGroup struct {
	title string
	nodes []DescribedNode
}

type graphEdge struct {
	from, to string // node names, or "topic:NAME" / "store:NAME"
	memory   bool   // an in-memory repartition: sink to the internal source reading its topic
}

func (d *TopologyDescription) graph() graphView {
	var g graphView
	seenTopic, seenStore := map[string]bool{}, map[string]bool{}
	topic := func(t string) string {
		if !seenTopic[t] {
			seenTopic[t] = true
			g.topics = append(g.topics, t)
		}
		return "topic:" + t
	}
	store := func(s string) string {
		if !seenStore[s] {
			seenStore[s] = true
			g.stores = append(g.stores, s)
		}
		return "store:" + s
	}
	internalSource := map[string]string{} // repartition topic → its internal source
	for _, st := range d.Subtopologies {
		for _, n := range st.Nodes {
			if n.Type == "source" && n.Internal {
				for _, t := range n.Topics {
					internalSource[t] = n.Name
				}
			}
		}
	}
	add := func(n DescribedNode) {
		switch {
		case n.Type == "source" && !n.Internal:
			for _, t := range n.Topics {
				g.edges = append(g.edges, graphEdge{from: topic(t), to: n.Name})
			}
		case n.Type == "sink" && n.Internal && internalSource[n.Topic] != "":
			g.edges = append(g.edges, graphEdge{from: n.Name, to: internalSource[n.Topic], memory: true})
		case n.Type == "sink" && n.Topic != "":
			g.edges = append(g.edges, graphEdge{from: n.Name, to: topic(n.Topic)})
		}
		for _, s := range slices.Concat(n.Stores, n.ReadsGlobal) {
			g.edges = append(g.edges, graphEdge{from: n.Name, to: store(s)})
		}
		for _, c := range n.Successors {
			g.edges = append(g.edges, graphEdge{from: n.Name, to: c})
		}
	}
	for _, st := range d.Subtopologies {
		g.groups = append(g.groups, graphGroup{title: fmt.Sprintf("Sub-topology: %d", st.ID), nodes: st.Nodes})
		for _, n := range st.Nodes {
			add(n)
		}
	}
	for _, gs := range d.GlobalStores {
		g.groups = append(g.groups, graphGroup{title: fmt.Sprintf("Sub-topology: %d for global store", gs.ID), nodes: []DescribedNode{gs.Source, gs.Processor}})
		add(gs.Source)
		add(gs.Processor)
	}
	return g
}

// nodeLabel is a node's first describe() line, without its successors.
func nodeLabel(n DescribedNode) string {
	kind := map[string]string{"source": "Source", "processor": "Processor", "sink": "Sink"}[n.Type]
	label := kind + ": " + n.Name
	switch {
	case len(n.Topics) > 0:
		label += "\ntopics: [" + strings.Join(n.Topics, ", ") + "]"
	case n.Topic != "":
		label += "\ntopic: " + n.Topic
	case n.Extractor != "":
		label += "\nextractor: " + n.Extractor
	}
	if n.Internal {
		label += "\n(in memory)"
	}
	return label
}

// DOT renders the description in Graphviz's language: `dot -Tsvg` draws it.
func (d *TopologyDescription) DOT() string {
	g := d.graph()
	q := func(s string) string {
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
	}
	var b strings.Builder
	b.WriteString("digraph topology {\n  rankdir=TB;\n  node [shape=box, fontname=\"sans-serif\"];\n")
	for i, grp := range g.groups {
		fmt.Fprintf(&b, "  subgraph cluster_%d {\n    label=%s;\n", i, q(grp.title))
		for _, n := range grp.nodes {
			fmt.Fprintf(&b, "    %s [label=%s];\n", q(n.Name), q(nodeLabel(n)))
		}
		b.WriteString("  }\n")
	}
	for _, t := range g.topics {
		fmt.Fprintf(&b, "  %s [label=%s, shape=ellipse];\n", q("topic:"+t), q(t))
	}
	for _, s := range g.stores {
		fmt.Fprintf(&b, "  %s [label=%s, shape=cylinder];\n", q("store:"+s), q(s))
	}
	for _, e := range g.edges {
		attrs := ""
		switch {
		case e.memory:
			attrs = ` [style=dashed, label="in memory"]`
		case strings.HasPrefix(e.to, "store:"):
			attrs = " [arrowhead=none, style=dotted]"
		}
		fmt.Fprintf(&b, "  %s -> %s%s;\n", q(e.from), q(e.to), attrs)
	}
	b.WriteString("}\n")
	return b.String()
}

// Mermaid renders the description as a Mermaid flowchart, which GitHub draws in Markdown.
func (d *TopologyDescription) Mermaid() string {
	g := d.graph()
	ids := map[string]string{}
	id := func(name string) string {
		if v, ok := ids[name]; ok {
			return v
		}
		v := fmt.Sprintf("n%d", len(ids))
		ids[name] = v
		return v
	}
	// Mermaid labels are quoted strings: a quote is written as its entity, a new line as <br>.
	q := func(s string) string {
		return `"` + strings.NewReplacer(`"`, "#quot;", "\n", "<br>").Replace(s) + `"`
	}
	var b strings.Builder
	b.WriteString("flowchart TB\n")
	for i, grp := range g.groups {
		fmt.Fprintf(&b, "  subgraph s%d[%s]\n", i, q(grp.title))
		for _, n := range grp.nodes {
			fmt.Fprintf(&b, "    %s[%s]\n", id(n.Name), q(nodeLabel(n)))
		}
		b.WriteString("  end\n")
	}
	for _, t := range g.topics {
		fmt.Fprintf(&b, "  %s([%s])\n", id("topic:"+t), q(t))
	}
	for _, s := range g.stores {
		fmt.Fprintf(&b, "  %s[(%s)]\n", id("store:"+s), q(s))
	}
	for _, e := range g.edges {
		arrow := " --> "
		switch {
		case e.memory:
			arrow = " -. in memory .-> "
		case strings.HasPrefix(e.to, "store:"):
			arrow = " --- "
		}
		fmt.Fprintf(&b, "  %s%s%s\n", id(e.from), arrow, id(e.to))
	}
	return b.String()
}

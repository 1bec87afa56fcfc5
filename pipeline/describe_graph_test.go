package pipeline

import (
	"strings"
	"testing"
)

// countTopology is in → groupBy (repartitioned in memory) → count(store "counts") → out.
func countTopology(t *testing.T) *TopologyDescription {
	t.Helper()
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	g, err := s.GroupBy(func(r Record) (any, error) { return r.Value, nil }, Grouped{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := g.Count(Materialized{StoreName: "counts"}, longTestSerde{}, "")
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := c.ToStream("")
	if err := ts.To("out", Produced{}); err != nil {
		t.Fatal(err)
	}
	return b.Describe()
}

func TestDOTAndMermaidDrawEveryNode(t *testing.T) {
	d := countTopology(t)
	dot, mermaid := d.DOT(), d.Mermaid()
	for _, name := range d.NodeNames() {
		if !strings.Contains(dot, `"`+name+`" [label="`) {
			t.Errorf("DOT has no box for %s:\n%s", name, dot)
		}
		if !strings.Contains(mermaid, ": "+name) {
			t.Errorf("Mermaid has no box for %s:\n%s", name, mermaid)
		}
	}
	for _, want := range []string{
		`"topic:in" -> "KSTREAM-SOURCE-0000000000";`,
		`[style=dashed, label="in memory"]`,
		`"store:counts" [label="counts", shape=cylinder];`,
		`-> "topic:out";`,
		"subgraph cluster_1 {\n    label=\"Sub-topology: 1\";",
	} {
		if !strings.Contains(dot, want) {
			t.Errorf("DOT lacks %q:\n%s", want, dot)
		}
	}
	for _, want := range []string{
		"flowchart TB\n",
		`subgraph s0["Sub-topology: 0"]`,
		` -. in memory .-> `,
		`[("counts")]`,
		`(["out"])`,
	} {
		if !strings.Contains(mermaid, want) {
			t.Errorf("Mermaid lacks %q:\n%s", want, mermaid)
		}
	}
}

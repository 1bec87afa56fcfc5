package pipeline

import (
	"strings"
	"testing"
)

// tapFixture is in → mapValues(upper) → out, with its node names.
func tapFixture(t testing.TB) (*Driver, []string) {
	t.Helper()
	b := newTestBuilder()
	s, err := b.Stream([]string{"in"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.MapValues(func(r Record) (any, error) { return strings.ToUpper(r.Value.(string)), nil }, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.To("out", Produced{}); err != nil {
		t.Fatal(err)
	}
	d, err := NewDriver(b, DriverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range b.Nodes() {
		names = append(names, n.Name)
	}
	return d, names
}

// A tap sees what its node emits: the source what it read, the processor its results, the
// sink what it writes; removing it stops it.
func TestTapSeesWhatANodeEmits(t *testing.T) {
	d, nodes := tapFixture(t)
	seen := map[string][]string{}
	for _, n := range nodes {
		if err := d.topo.SetTap(n, func(r Record) { seen[n] = append(seen[n], r.Key.(string)+"="+r.Value.(string)) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Pipe("in", []byte("k"), []byte("stoat"), 1, nil); err != nil {
		t.Fatal(err)
	}
	source, mapper, sink := nodes[0], nodes[1], nodes[2]
	want := map[string]string{source: "k=stoat", mapper: "k=STOAT", sink: "k=STOAT"}
	for n, w := range want {
		if got := strings.Join(seen[n], " "); got != w {
			t.Errorf("tap of %s saw %q, want %q", n, got, w)
		}
	}
	if err := d.topo.SetTap(mapper, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Pipe("in", []byte("k"), []byte("again"), 2, nil); err != nil {
		t.Fatal(err)
	}
	if len(seen[mapper]) != 1 || len(seen[sink]) != 2 {
		t.Fatalf("after removing the mapper's tap: %v", seen)
	}
	if err := d.topo.SetTap("NOPE", nil); err == nil || !strings.Contains(err.Error(), `"NOPE"`) {
		t.Fatalf("tapping an unknown node: %v", err)
	}
}

// CurrentNode names the node whose processing runs, for the code it calls.
func TestCurrentNodeDuringProcessing(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	var topo *Topology
	var during []string
	_, _ = s.MapValues(func(r Record) (any, error) { during = append(during, topo.CurrentNode()); return r.Value, nil }, "upper")
	d, err := NewDriver(b, DriverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	topo = d.topo
	if err := d.Pipe("in", nil, []byte("v"), 1, nil); err != nil {
		t.Fatal(err)
	}
	if len(during) != 1 || during[0] != "upper" || topo.CurrentNode() != "" {
		t.Fatalf("during %v, after %q", during, topo.CurrentNode())
	}
}

// The cost of the tap hook: a record through source → mapValues → sink with no tap (one
// nil check per node, no allocation) and with a tap on the mapValues node.
func BenchmarkTopologyTap(b *testing.B) {
	for _, tapped := range []bool{false, true} {
		name := "off"
		if tapped {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			d, nodes := tapFixture(b)
			seen := 0
			if tapped {
				if err := d.topo.SetTap(nodes[1], func(Record) { seen++ }); err != nil {
					b.Fatal(err)
				}
			}
			in := SourceRecord{Topic: "in", Key: []byte("k"), Value: []byte("stoat"), Timestamp: 1}
			b.ReportAllocs()
			for b.Loop() {
				if err := d.topo.Process(&in); err != nil {
					b.Fatal(err)
				}
				d.outputs["out"] = d.outputs["out"][:0]
			}
			if tapped && seen == 0 {
				b.Fatal("the tap saw nothing")
			}
		})
	}
}

// Each node knows the serde its values are written with as far as the DSL does: a source's,
// what a filter passes on, an aggregation's store, a table's stream, a sink's; not after a
// mapValues, which may change the values' type.
func TestNodesKnowTheirValueSerde(t *testing.T) {
	type serde struct{ bytesSerde }
	src, count, out := &serde{}, &serde{}, &serde{}
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{Serdes: Serdes{Value: src}})
	f, _ := s.Filter(func(Record) (bool, error) { return true, nil }, "")
	m, _ := f.MapValues(func(r Record) (any, error) { return r.Value, nil }, "")
	g, _ := f.GroupByKey(Grouped{})
	counts, err := g.Count(Materialized{StoreName: "counts"}, count, "")
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := counts.ToStream("")
	if err := ts.To("out", Produced{Serdes: Serdes{Value: out}}); err != nil {
		t.Fatal(err)
	}
	if err := m.To("other", Produced{}); err != nil {
		t.Fatal(err)
	}
	topo, err := b.Build(TopologyOptions{Stores: NewMemoryStores()})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Serde{s.Node().Name: src, f.Node().Name: src, m.Node().Name: nil,
		counts.node.Name: count, ts.Node().Name: count}
	for _, n := range b.Nodes() {
		if n.Kind == SinkNode {
			want[n.Name] = out
			if n.Topic == "other" {
				want[n.Name] = bytesSerde{} // the builder's default
			}
		}
	}
	for node, s := range want {
		if got := topo.ValueSerde(node); got != s {
			t.Errorf("%s: value serde %v, want %v", node, got, s)
		}
	}
}

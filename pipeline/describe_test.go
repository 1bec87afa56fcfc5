package pipeline

import (
	"strings"
	"testing"
)

func TestJavaHashSetOrder(t *testing.T) {
	// Expected orders printed by java.util.HashSet (OpenJDK 17) for the same inputs.
	cases := []struct{ in, want []string }{
		{[]string{"topic-b", "topic-a"}, []string{"topic-a", "topic-b"}},
		{[]string{"a", "b", "c"}, []string{"a", "b", "c"}},
		{[]string{"input", "other-input", "zzz"}, []string{"input", "zzz", "other-input"}},
		{[]string{"store-one", "store-two", "s3", "abc-store"}, []string{"s3", "store-two", "abc-store", "store-one"}},
	}
	for _, c := range cases {
		if got := strings.Join(javaHashSetOrder(c.in), ","); got != strings.Join(c.want, ",") {
			t.Errorf("%v: got %s, want %v", c.in, got, c.want)
		}
	}
}

func TestDescribeRepartitionSplitsSubtopologies(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	f, _ := s.Filter(func(Record) (bool, error) { return true, nil }, "")
	r, _ := f.Repartition(Repartitioned{})
	m, _ := r.MapValues(func(rec Record) (any, error) { return rec.Value, nil }, "")
	_ = m.To("out", Produced{})
	want := `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [in])
      --> KSTREAM-FILTER-0000000001
    Processor: KSTREAM-FILTER-0000000001 (stores: [])
      --> KSTREAM-FILTER-0000000004
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-FILTER-0000000004 (stores: [])
      --> KSTREAM-SINK-0000000003
      <-- KSTREAM-FILTER-0000000001
    Sink: KSTREAM-SINK-0000000003 (topic: KSTREAM-REPARTITION-0000000002-repartition)
      <-- KSTREAM-FILTER-0000000004

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000005 (topics: [KSTREAM-REPARTITION-0000000002-repartition])
      --> KSTREAM-MAPVALUES-0000000006
    Processor: KSTREAM-MAPVALUES-0000000006 (stores: [])
      --> KSTREAM-SINK-0000000007
      <-- KSTREAM-SOURCE-0000000005
    Sink: KSTREAM-SINK-0000000007 (topic: out)
      <-- KSTREAM-MAPVALUES-0000000006

`
	if got := b.Describe().String(); got != want {
		t.Fatalf("describe:\n%s\nwant:\n%s", got, want)
	}
}

func TestDescribeNamedRepartitionAndSplit(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in", "in2"}, Consumed{})
	r, _ := s.Repartition(Repartitioned{Name: "by-user"})
	split, _ := r.Split("route-")
	a, _, _ := split.Branch(func(Record) (bool, error) { return true, nil }, "a")
	d, _, _ := split.DefaultBranch("")
	_ = a.To("out-a", Produced{})
	_ = d.To("out-rest", Produced{})
	got := b.Describe().String()
	for _, want := range []string{
		"Source: KSTREAM-SOURCE-0000000000 (topics: [in, in2])\n      --> by-user-repartition-filter\n",
		"Sink: by-user-repartition-sink (topic: by-user-repartition)\n",
		"  Sub-topology: 1\n    Source: by-user-repartition-source (topics: [by-user-repartition])\n      --> route-\n",
		"    Processor: route- (stores: [])\n      --> route-0, route-a\n",
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("describe:\n%s\nmissing:\n%s", got, want)
		}
	}
}

// Kafka Streams' process(supplier, Named, stores) takes the name without burning an index
// (NamedInternal.name(), not orElseGenerateWithPrefix as the other operators): the sink after
// it is KSTREAM-SINK-0000000001 (found by the conformance suite).
func TestDescribeNamedProcessBurnsNoIndex(t *testing.T) {
	for _, values := range []bool{false, true} {
		b := newTestBuilder()
		s, _ := b.Stream([]string{"in"}, Consumed{})
		supplier := func() (UserProcessor, error) { return nil, nil }
		var p *KStream
		var err error
		if values {
			p, err = s.ProcessValues(supplier, nil, "counter")
		} else {
			p, err = s.Process(supplier, nil, "counter")
		}
		if err != nil {
			t.Fatal(err)
		}
		_ = p.To("out", Produced{})
		got := b.Describe().String()
		want := "    Processor: counter (stores: [])\n      --> KSTREAM-SINK-0000000001\n"
		if !strings.Contains(got, want) {
			t.Fatalf("processValues=%v: describe:\n%s\nmissing:\n%s", values, got, want)
		}
	}
}

// Kafka Streams links the nodes one by one and keeps predecessors in a TreeSet by the
// sizes of the moment: a merge lists its parents in the order they were linked (this, then
// other), although by their final sizes and names the other would come first.
func TestDescribeMergeListsParentsInLinkOrder(t *testing.T) {
	b := newTestBuilder()
	s1, _ := b.Stream([]string{"one"}, Consumed{Name: "b-source"})
	s2, _ := b.Stream([]string{"two"}, Consumed{Name: "a-source"})
	m, _ := s1.Merge(s2, "")
	_ = m.To("out", Produced{})
	want := `Topologies:
   Sub-topology: 0
    Source: a-source (topics: [two])
      --> KSTREAM-MERGE-0000000002
    Source: b-source (topics: [one])
      --> KSTREAM-MERGE-0000000002
    Processor: KSTREAM-MERGE-0000000002 (stores: [])
      --> KSTREAM-SINK-0000000003
      <-- b-source, a-source
    Sink: KSTREAM-SINK-0000000003 (topic: out)
      <-- KSTREAM-MERGE-0000000002

`
	if got := b.Describe().String(); got != want {
		t.Fatalf("describe:\n%s\nwant:\n%s", got, want)
	}
}

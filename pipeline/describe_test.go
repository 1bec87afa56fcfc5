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
		"    Processor: route- (stores: [])\n      --> route-a, route-0\n",
		// A named repartition takes no index (KStreamImpl#doRepartition): the sinks are 7 and 8.
		"Sink: KSTREAM-SINK-0000000007 (topic: out-a)\n      <-- route-a\n",
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

// A Grouped name names the key-selecting node of groupBy, on streams and tables, taking an
// index as a generated name would (KStreamImpl#groupBy, KTableImpl#groupBy): the text is
// Kafka Streams 4.4's describe() of the same topology.
func TestDescribeGroupedNameNamesTheKeySelector(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	gs, err := s.GroupBy(func(rec Record) (any, error) { return rec.Value, nil }, Grouped{Name: "by-value"})
	if err != nil {
		t.Fatal(err)
	}
	counts, err := gs.Count(Materialized{}, bytesSerde{}, "")
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := counts.ToStream("")
	_ = cs.To("out", Produced{})
	table, _ := b.Table("t", Consumed{}, Materialized{})
	gt, err := table.GroupBy(func(rec Record) (any, any, error) { return rec.Value, rec.Value, nil }, Grouped{Name: "t-by-value"})
	if err != nil {
		t.Fatal(err)
	}
	tcounts, err := gt.Count(Materialized{}, bytesSerde{}, "")
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := tcounts.ToStream("")
	_ = ts.To("out2", Produced{})
	want := `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [in])
      --> by-value
    Processor: by-value (stores: [])
      --> by-value-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: by-value-repartition-filter (stores: [])
      --> by-value-repartition-sink
      <-- by-value
    Sink: by-value-repartition-sink (topic: by-value-repartition)
      <-- by-value-repartition-filter

  Sub-topology: 1
    Source: by-value-repartition-source (topics: [by-value-repartition])
      --> KSTREAM-AGGREGATE-0000000003
    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])
      --> KTABLE-TOSTREAM-0000000007
      <-- by-value-repartition-source
    Processor: KTABLE-TOSTREAM-0000000007 (stores: [])
      --> KSTREAM-SINK-0000000008
      <-- KSTREAM-AGGREGATE-0000000003
    Sink: KSTREAM-SINK-0000000008 (topic: out)
      <-- KTABLE-TOSTREAM-0000000007

  Sub-topology: 2
    Source: KSTREAM-SOURCE-0000000010 (topics: [t])
      --> KTABLE-SOURCE-0000000011
    Processor: KTABLE-SOURCE-0000000011 (stores: [t-STATE-STORE-0000000009])
      --> t-by-value
      <-- KSTREAM-SOURCE-0000000010
    Processor: t-by-value (stores: [])
      --> KSTREAM-SINK-0000000014
      <-- KTABLE-SOURCE-0000000011
    Sink: KSTREAM-SINK-0000000014 (topic: t-by-value-repartition)
      <-- t-by-value

  Sub-topology: 3
    Source: KSTREAM-SOURCE-0000000015 (topics: [t-by-value-repartition])
      --> KTABLE-AGGREGATE-0000000016
    Processor: KTABLE-AGGREGATE-0000000016 (stores: [KTABLE-AGGREGATE-STATE-STORE-0000000013])
      --> KTABLE-TOSTREAM-0000000017
      <-- KSTREAM-SOURCE-0000000015
    Processor: KTABLE-TOSTREAM-0000000017 (stores: [])
      --> KSTREAM-SINK-0000000018
      <-- KTABLE-AGGREGATE-0000000016
    Sink: KSTREAM-SINK-0000000018 (topic: out2)
      <-- KTABLE-TOSTREAM-0000000017
`
	if got := b.Describe().String(); strings.TrimSpace(got) != strings.TrimSpace(want) {
		t.Fatalf("describe:\n%s\nwant:\n%s", got, want)
	}
}

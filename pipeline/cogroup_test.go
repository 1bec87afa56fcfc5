package pipeline

import (
	"strings"
	"testing"
)

func concatAgg(tag string) Aggregator {
	return func(rec Record, agg any) (any, error) { return agg.(string) + tag + string(rec.Value.([]byte)), nil }
}

// Re-adding an input replaces its aggregator in place, like Kafka Streams' LinkedHashMap of
// inputs: one processor per distinct grouped stream.
func TestCogroupReaddingAnInputReplacesItsAggregator(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	g, _ := s.GroupByKey(Grouped{})
	c, err := g.Cogroup(concatAgg("A"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cogroup(g, concatAgg("B")); err != nil {
		t.Fatal(err)
	}
	table, err := c.Aggregate(func() (any, error) { return "", nil }, Materialized{}, "")
	if err != nil {
		t.Fatal(err)
	}
	want := "KSTREAM-SOURCE-0000000000 COGROUPKSTREAM-AGGREGATE-0000000002 COGROUPKSTREAM-MERGE-0000000003"
	if got := names(b); got != want {
		t.Fatalf("names %s, want %s", got, want)
	}
	if table.StoreName() != "COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000001" {
		t.Fatalf("store %q", table.StoreName())
	}
	got, err := c.inputs[0].agg(Record{Value: []byte("1")}, "")
	if err != nil || got != "B1" {
		t.Fatalf("aggregator = %v, %v; want the replacing one", got, err)
	}
}

func TestCogroupRejectsAnotherBuildersStream(t *testing.T) {
	b1, b2 := newTestBuilder(), newTestBuilder()
	s1, _ := b1.Stream([]string{"a"}, Consumed{})
	s2, _ := b2.Stream([]string{"b"}, Consumed{})
	g1, _ := s1.GroupByKey(Grouped{})
	g2, _ := s2.GroupByKey(Grouped{})
	c, _ := g1.Cogroup(concatAgg("A"))
	if _, err := c.Cogroup(g2, concatAgg("B")); err == nil || !strings.Contains(err.Error(), "another StreamsBuilder") {
		t.Fatalf("error %v", err)
	}
	if _, err := c.Aggregate(nil, Materialized{}, ""); err == nil || !strings.Contains(err.Error(), "initializer") {
		t.Fatalf("nil initializer: %v", err)
	}
}

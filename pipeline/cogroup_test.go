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

// Each input of a windowed cogroup runs its own KStreamWindowAggregate, with its own stream
// time (CogroupedStreamAggregateBuilder): a record of one input is late only by that input's
// stream time, and all of them update the one shared store. As in Kafka Streams, the store's
// retention follows every put: input two's window [0, 10) is accepted at its stream time 5
// but already expired in the store at 100, so its second record starts it again.
func TestWindowedCogroupInputsKeepTheirOwnStreamTime(t *testing.T) {
	b := newTestBuilder()
	s1, _ := b.Stream([]string{"one"}, Consumed{})
	s2, _ := b.Stream([]string{"two"}, Consumed{})
	g1, _ := s1.GroupByKey(Grouped{})
	g2, _ := s2.GroupByKey(Grouped{})
	tagged := func(tag string) Aggregator {
		return func(rec Record, agg any) (any, error) { return agg.(string) + tag + rec.Value.(string), nil }
	}
	c, _ := g1.Cogroup(tagged("A"))
	if _, err := c.Cogroup(g2, tagged("B")); err != nil {
		t.Fatal(err)
	}
	w, err := c.WindowedBy(TimeWindows{Size: 10, Advance: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Aggregate(func() (any, error) { return "", nil }, func(Record, any, any) (any, error) { return nil, nil }, Materialized{}, ""); err == nil {
		t.Fatal("a time-windowed cogroup took a session merger")
	}
	table, err := w.Aggregate(func() (any, error) { return "", nil }, nil, Materialized{}, "")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := table.ToStream("")
	if err := s.To("out", Produced{}); err != nil {
		t.Fatal(err)
	}
	sensors := newCountingSensors()
	d, err := NewDriver(b, DriverOptions{Sensors: sensors, Stores: NewMemoryStores()})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []struct {
		topic, v string
		ts       int64
	}{{"one", "1", 100}, {"two", "2", 5}, {"one", "3", 5}, {"two", "4", 7}} {
		if err := d.Pipe(in.topic, []byte("k"), []byte(in.v), in.ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for {
		r, ok := d.ReadOutput("out")
		if !ok {
			break
		}
		got = append(got, string(r.Value))
	}
	if strings.Join(got, " ") != "A1 B2 B4" || sensors.dropped["late"] != 1 {
		t.Fatalf("outputs %v, drops %v; want A1 B2 B4 and one late record, of input one", got, sensors.dropped)
	}
}

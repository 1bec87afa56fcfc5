package pipeline

import (
	"fmt"
	"reflect"
	"testing"
)

// Null values in windowed aggregations, as Kafka Streams 4.4 handles them:
// KStreamWindowAggregate and KStreamSessionWindowAggregate drop only null keys and hand a
// null value to the aggregator (count counts it; reduce takes it as the first aggregate, a
// null one that deletes the window and is forwarded as a tombstone), while
// KStreamSlidingWindowAggregate drops null keys and null values alike; every drop is counted.

// nullsRun pipes k=nil@0, k=a@1 and a null key@2 through in → groupByKey → window →
// result → a terminal keeping "key=value@ts", and returns that and the drops.
func nullsRun(t *testing.T, result func(g *KGroupedStream) (*KTable, error)) ([]string, map[string]int) {
	t.Helper()
	b := newTestBuilder()
	s, err := b.Stream([]string{"in"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.GroupByKey(Grouped{})
	if err != nil {
		t.Fatal(err)
	}
	table, err := result(g)
	if err != nil {
		t.Fatal(err)
	}
	out, err := table.ToStream("")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = out.Foreach(func(r Record) error {
		got = append(got, fmt.Sprintf("%v=%v@%d", r.Key, r.Value, r.Timestamp))
		return nil
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	sensors := newCountingSensors()
	d, err := NewDriver(b, DriverOptions{Stores: NewMemoryStores(), Sensors: sensors})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []struct {
		key, value []byte
		ts         int64
	}{{[]byte("k"), nil, 0}, {[]byte("k"), []byte("a"), 1}, {nil, []byte("b"), 2}} {
		if err := d.Pipe("in", in.key, in.value, in.ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	return got, sensors.dropped
}

// orNull renders a value as Java's string concatenation does.
func orNull(v any) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(v)
}

var (
	nullsInit   = func() (any, error) { return "", nil }
	nullsAgg    = func(rec Record, agg any) (any, error) { return orNull(agg) + "," + orNull(rec.Value), nil }
	nullsReduce = func(rec Record, agg any) (any, error) { return orNull(agg) + "+" + orNull(rec.Value), nil }
)

func TestWindowedAggregationsHandNullValuesAsKafkaStreams(t *testing.T) {
	tumbling := TimeWindows{Size: 10, Advance: 10}
	sessions := SessionWindows{Gap: 10}
	sliding := SlidingWindows{TimeDifference: 10}
	for _, c := range []struct {
		name    string
		result  func(g *KGroupedStream) (*KTable, error)
		want    []string
		dropped map[string]int
	}{
		{"time aggregate", func(g *KGroupedStream) (*KTable, error) {
			w, _ := g.WindowedBy(tumbling)
			return w.Aggregate(nullsInit, nullsAgg, Materialized{}, "")
		}, []string{"[k@0/10]=,null@0", "[k@0/10]=,null,a@1"}, map[string]int{"null-key": 1}},
		{"time count", func(g *KGroupedStream) (*KTable, error) {
			w, _ := g.WindowedBy(tumbling)
			return w.Count(Materialized{}, int64Serde{}, "")
		}, []string{"[k@0/10]=1@0", "[k@0/10]=2@1"}, map[string]int{"null-key": 1}},
		{"time reduce", func(g *KGroupedStream) (*KTable, error) {
			w, _ := g.WindowedBy(tumbling)
			return w.Reduce(nullsReduce, Materialized{}, "")
		}, []string{"[k@0/10]=<nil>@0", "[k@0/10]=a@1"}, map[string]int{"null-key": 1}},
		{"session count", func(g *KGroupedStream) (*KTable, error) {
			w, _ := g.WindowedBySession(sessions)
			return w.Count(Materialized{}, int64Serde{}, "")
		}, []string{"[k@0/0]=1@0", "[k@0/0]=<nil>@0", "[k@0/1]=2@1"}, map[string]int{"null-key": 1}},
		{"session reduce", func(g *KGroupedStream) (*KTable, error) {
			w, _ := g.WindowedBySession(sessions)
			return w.Reduce(nullsReduce, Materialized{}, "")
		}, []string{"[k@0/0]=<nil>@0", "[k@1/1]=a@1"}, map[string]int{"null-key": 1}},
		{"sliding count", func(g *KGroupedStream) (*KTable, error) {
			w, _ := g.WindowedBySliding(sliding)
			return w.Count(Materialized{}, int64Serde{}, "")
		}, []string{"[k@0/10]=1@1"}, map[string]int{"null-key": 1, "null-value": 1}},
	} {
		got, dropped := nullsRun(t, c.result)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
		for reason, n := range c.dropped {
			if dropped[reason] != n {
				t.Errorf("%s: %d %s drops, want %d (all: %v)", c.name, dropped[reason], reason, n, dropped)
			}
		}
	}
}

package pipeline

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"testing"
)

// suppressedReduce builds in → groupByKey → 10 ms tumbling windows with 5 ms grace → reduce
// (concatenation) → suppress(untilWindowCloses) → out.
func suppressedReduce(t *testing.T) *StreamsBuilder {
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
	w, err := g.WindowedBy(TimeWindows{Size: 10, Advance: 10, Grace: 5})
	if err != nil {
		t.Fatal(err)
	}
	concat := func(rec Record, agg any) (any, error) { return agg.(string) + rec.Value.(string), nil }
	table, err := w.Reduce(concat, Materialized{}, "")
	if err != nil {
		t.Fatal(err)
	}
	final, err := table.Suppress(Suppressed{UntilWindowCloses: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err := final.ToStream("")
	if err != nil {
		t.Fatal(err)
	}
	if err := out.To("out", Produced{}); err != nil {
		t.Fatal(err)
	}
	return b
}

func drain(d *Driver) []string {
	var out []string
	for {
		r, ok := d.ReadOutput("out")
		if !ok {
			return out
		}
		key := r.Key[:len(r.Key)-8]
		out = append(out, fmt.Sprintf("%s@%d=%s@%d", key, binary.BigEndian.Uint64(r.Key[len(r.Key)-8:]), r.Value, r.Timestamp))
	}
}

// A restart over the same stores neither loses a buffered window nor emits one twice.
func TestSuppressSurvivesRestart(t *testing.T) {
	stores := NewMemoryStores()
	run := func(inputs []struct {
		k, v string
		ts   int64
	}) []string {
		d, err := NewDriver(suppressedReduce(t), DriverOptions{Stores: stores, ApplicationID: "app"})
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range inputs {
			if err := d.Pipe("in", []byte(in.k), []byte(in.v), in.ts, nil); err != nil {
				t.Fatal(err)
			}
		}
		return drain(d)
	}
	type in = struct {
		k, v string
		ts   int64
	}
	first := run([]in{{"k", "a", 0}, {"k", "b", 3}, {"j", "c", 12}, {"j", "d", 15}})
	if want := []string{"k@0=ab@3"}; !reflect.DeepEqual(first, want) {
		t.Fatalf("first run: %v, want %v", first, want)
	}
	second := run([]in{{"x", "e", 26}})
	if want := []string{"j@10=cd@15"}; !reflect.DeepEqual(second, want) {
		t.Fatalf("after the restart: %v, want %v", second, want)
	}
}

func TestSuppressNeedsAWindowedParent(t *testing.T) {
	b := newTestBuilder()
	s, err := b.Stream([]string{"in"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	table, err := s.ToTable("", Materialized{})
	if err != nil {
		t.Fatal(err)
	}
	filtered, err := table.Filter(func(Record) (bool, error) { return true, nil }, false, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = filtered.Suppress(Suppressed{UntilWindowCloses: true})
	want := "Invalid topology: Window close time is only defined for windowed computations. Got [root->KSTREAM-SOURCE-0000000000->KSTREAM-TOTABLE-0000000001->KTABLE-FILTER-0000000003]."
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

func TestBufferedChangeRoundTrip(t *testing.T) {
	for _, e := range []bufferedChange{
		{Timestamp: 5, Offset: 7, Topic: "in", Partition: 2, Headers: Headers{{"h", []byte("v")}, {"n", nil}},
			Prior: []byte("p"), Old: []byte("p"), New: []byte("n"), BufferTime: 10},
		{Timestamp: -1, Offset: -1, Prior: nil, Old: []byte("o"), New: nil, BufferTime: 3},
		{Prior: []byte{}, Old: nil, New: []byte{}},
	} {
		got, err := decodeBufferedChange(e.encode())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Fatalf("round trip: got %+v, want %+v", got, e)
		}
	}
	b := bufferedChange{New: []byte("x")}.encode()
	if _, err := decodeBufferedChange(b[:len(b)-1]); err == nil {
		t.Fatal("a truncated entry decoded")
	}
}

// An update the aggregation still accepts on its partition's stream time, for a window the
// watermark has already closed, is dropped: a final result is never revised.
func TestSuppressDropsUpdatesOfClosedWindows(t *testing.T) {
	d, err := NewDriver(suppressedReduce(t), DriverOptions{Stores: NewMemoryStores(), Partitions: map[string]int32{"in": 2}})
	if err != nil {
		t.Fatal(err)
	}
	send := func(p int32, k, v string, ts int64) {
		t.Helper()
		if err := d.topo.Process(&SourceRecord{Topic: "in", Partition: p, Timestamp: ts, Key: []byte(k), Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
	send(0, "k", "a", 0)
	send(0, "x", "b", 20)
	if got, want := drain(d), []string{"k@0=a@0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("at 20: %v, want %v", got, want)
	}
	send(1, "k", "c", 5)
	send(0, "x", "d", 40)
	if got, want := drain(d), []string{"x@20=b@20"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("at 40: %v, want %v (the late update of k@0 must not be emitted)", got, want)
	}
}

// An update waiting in the record cache was accepted while its window was open: it reaches
// suppress before the watermark closes that window, so the final result holds it.
func TestSuppressGetsCachedUpdatesBeforeTheWatermarkClosesTheirWindow(t *testing.T) {
	d := &Driver{outputs: map[string][]OutputRecord{}, partitions: map[string]int32{}, offsets: map[string]int64{}}
	topo, err := suppressedReduce(t).Build(TopologyOptions{Collector: d, Stores: NewMemoryStores(), CacheMaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	d.topo = topo
	topo.SetAssignment([]TopicPartition{{Topic: "in", Partition: 0}})
	for _, r := range []SourceRecord{
		{Topic: "in", Timestamp: 0, Key: []byte("k"), Value: []byte("a")},
		{Topic: "in", Timestamp: 3, Key: []byte("k"), Value: []byte("b")},
		{Topic: "in", Timestamp: 20, Key: []byte("x"), Value: []byte("c")},
	} {
		if err := topo.Process(&r); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := drain(d), []string{"k@0=ab@3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("final results at 20: %v, want %v", got, want)
	}
}

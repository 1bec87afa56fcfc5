package pipeline

import (
	"testing"
)

func cachedCount(t *testing.T, cacheBytes int64) (*Topology, *Driver) {
	t.Helper()
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	g, _ := s.GroupByKey(Grouped{})
	counts, err := g.Count(Materialized{StoreName: "counts"}, bytesSerde{}, "")
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := counts.ToStream("")
	var got []Record
	_ = ts.Foreach(func(r Record) error { got = append(got, r); return nil }, "")
	d := &Driver{outputs: map[string][]OutputRecord{}, partitions: map[string]int32{}, offsets: map[string]int64{}}
	topo, err := b.Build(TopologyOptions{Collector: d, Stores: NewMemoryStores(), CacheMaxBytes: cacheBytes})
	if err != nil {
		t.Fatal(err)
	}
	d.topo = topo
	return topo, d
}

// Between commits a key's updates collapse into one, forwarded at the flush with the value
// before the first update as the old value.
func TestRecordCacheCollapsesUpdatesUntilFlush(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	g, _ := s.GroupByKey(Grouped{})
	counts, _ := g.Aggregate(func() (any, error) { return "", nil },
		func(r Record, agg any) (any, error) { return agg.(string) + r.Value.(string), nil }, Materialized{StoreName: "agg"}, "")
	var got []Change
	counts.enableSendingOldValues()
	_, _ = counts.processor("KTABLE-PEEK-", "", func(*bool) Processor {
		return &peekProc{fn: func(r Record) error { got = append(got, r.Value.(Change)); return nil }}
	})
	topo, err := b.Build(TopologyOptions{Collector: &Driver{}, Stores: NewMemoryStores(), CacheMaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	pipeIn := func(k, v string) {
		if err := topo.Process(&SourceRecord{Topic: "in", Key: []byte(k), Value: []byte(v), Timestamp: 1}); err != nil {
			t.Fatal(err)
		}
	}
	pipeIn("k", "a")
	if err := topo.FlushCaches(); err != nil {
		t.Fatal(err)
	}
	pipeIn("k", "b")
	pipeIn("k", "c")
	pipeIn("j", "x")
	if len(got) != 1 {
		t.Fatalf("forwarded before the flush: %v", got)
	}
	if err := topo.FlushCaches(); err != nil {
		t.Fatal(err)
	}
	want := []Change{{New: "a", Old: nil}, {New: "abc", Old: "a"}, {New: "x", Old: nil}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

// A full cache forwards its least recently updated key early.
func TestRecordCacheEvictsWhenFull(t *testing.T) {
	c := newRecordCache(nil)
	var out []string
	c.forward = func(r Record) error { out = append(out, r.Key.(string)); return nil }
	c.max = 2 * (cacheEntryOverhead + 8)
	for _, k := range []string{"a", "b", "a", "c"} {
		if err := c.put(Record{Key: k, Value: Change{New: "v"}}); err != nil {
			t.Fatal(err)
		}
	}
	// "b" was updated least recently when "c" arrived.
	if len(out) != 1 || out[0] != "b" {
		t.Fatalf("evicted %v, want [b]", out)
	}
}

func TestRecordCacheOffWithZeroBudgetOrCachingDisabled(t *testing.T) {
	topo, _ := cachedCount(t, 0)
	if caches := topo.testCaches(t, TaskID{}); len(caches) != 0 {
		t.Fatal("a zero budget must not create caches")
	}
	topo, _ = cachedCount(t, 1<<20)
	if caches := topo.testCaches(t, TaskID{}); len(caches) != 1 || caches[0].max != 1<<20 {
		t.Fatalf("caches %d", len(caches))
	}
}

// The caches of a topology's tasks share its budget, as a thread's are shared among its
// tasks' stores in Kafka Streams; a task that closes gives its share back.
func TestRecordCachesShareTheBudgetAmongTasks(t *testing.T) {
	topo, _ := cachedCount(t, 1<<20)
	topo.testCaches(t, TaskID{Partition: 0})
	second := topo.testCaches(t, TaskID{Partition: 1})
	if second[0].max != 1<<19 {
		t.Fatalf("two tasks' caches get %d bytes each, want %d", second[0].max, 1<<19)
	}
	topo.CloseTask(TaskID{Partition: 0})
	if second[0].max != 1<<20 {
		t.Fatalf("the task left gets %d bytes, want %d", second[0].max, 1<<20)
	}
}

// Aggregations need a key: a record without one is dropped and counted, the others count.
func TestAggregationDropsNullKeysAndCountsThem(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	g, _ := s.GroupByKey(Grouped{})
	counts, _ := g.Count(Materialized{StoreName: "c"}, longTestSerde{}, "")
	ts, _ := counts.ToStream("")
	_ = ts.To("out", Produced{Serdes: Serdes{Value: longTestSerde{}}})
	sens := newCountingSensors()
	d, err := NewDriver(b, DriverOptions{Stores: NewMemoryStores(), Sensors: sens})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range [][]byte{[]byte("a"), nil, []byte("a")} {
		if err := d.Pipe("in", k, []byte("v"), 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	if d.Pending("out") != 2 || sens.dropped["null-key"] != 1 {
		t.Fatalf("outputs %d, dropped %v: want 2 outputs and one null-key drop", d.Pending("out"), sens.dropped)
	}
}

// An aggregation counts each task partition in that partition's store, whichever partition
// the record before came from (the context keeps the store partition it returned last).
func TestAggregationCountsEachPartitionInItsStore(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	g, _ := s.GroupByKey(Grouped{})
	counts, _ := g.Count(Materialized{StoreName: "c", CachingDisabled: true}, longTestSerde{}, "")
	ts, _ := counts.ToStream("")
	_ = ts.To("out", Produced{Serdes: Serdes{Value: longTestSerde{}}})
	d, err := NewDriver(b, DriverOptions{Stores: NewMemoryStores(), Partitions: map[string]int32{"in": 2}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []int32{0, 0, 1, 0, 1, 1, 1} {
		if err := d.PipeTo("in", p, []byte("a"), []byte("v"), 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	for p, want := range []int64{3, 4} {
		store, err := d.Store("c", int32(p))
		if err != nil {
			t.Fatal(err)
		}
		got, _, found, err := store.Get("a")
		if err != nil || !found || got != want {
			t.Errorf("partition %d: count %v (found %v, %v), want %d", p, got, found, err, want)
		}
	}
}

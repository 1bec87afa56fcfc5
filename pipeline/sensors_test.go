package pipeline

import (
	"strconv"
	"testing"
)

// sensorDriver runs in → a processor connected to specs' stores (running process) → out,
// with sensors that keep every observation; it returns the driver and the node names.
func sensorDriver(t *testing.T, specs []StoreSpec, process func(ctx *ProcessorContext, rec Record) error) (*Driver, *countingSensors, []string) {
	t.Helper()
	b := newTestBuilder()
	var stores []string
	for _, s := range specs {
		if err := b.AddStateStore(s); err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s.Name)
	}
	s, err := b.Stream([]string{"in"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	supplier := func() (UserProcessor, error) { return &funcProcessor{process: process}, nil }
	p, err := s.Process(supplier, stores, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.To("out", Produced{}); err != nil {
		t.Fatal(err)
	}
	sens := newCountingSensors()
	d, err := NewDriver(b, DriverOptions{Stores: NewMemoryStores(), Sensors: sens, WallClockMs: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for _, n := range b.Nodes() {
		nodes = append(nodes, n.Name)
	}
	return d, sens, nodes
}

func forward(ctx *ProcessorContext, rec Record) error { return ctx.Forward(rec) }

func TestEndToEndLatencyAtSourceAndSink(t *testing.T) {
	d, sens, nodes := sensorDriver(t, nil, forward)
	if err := d.Pipe("in", []byte("k"), []byte("v"), 7_000, nil); err != nil {
		t.Fatal(err)
	}
	source, processor, sink := nodes[0], nodes[1], nodes[2]
	for _, node := range []string{source, sink} {
		if got := sens.observed["e2e/"+node]; len(got) != 1 || got[0] != 3 {
			t.Errorf("e2e at %s = %v, want [3] (wall clock 10 s, record at 7 s)", node, got)
		}
	}
	if got, ok := sens.observed["e2e/"+processor]; ok {
		t.Errorf("e2e observed at the inner node %s: %v", processor, got)
	}
}

// TestEndToEndLatencyAtTerminalNodes: every node with no children observes once per record it
// processed, as Kafka Streams' terminal nodes do (a foreach, a process forwarding nowhere, a
// sink writing to two partitions), and nodes with children, the in-memory repartition
// topic's included, observe nothing.
func TestEndToEndLatencyAtTerminalNodes(t *testing.T) {
	b := newTestBuilder()
	s, err := b.Stream([]string{"in"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Foreach(func(Record) error { return nil }, "each"); err != nil {
		t.Fatal(err)
	}
	supplier := func() (UserProcessor, error) {
		return &funcProcessor{process: func(*ProcessorContext, Record) error { return nil }}, nil
	}
	if _, err := s.Process(supplier, nil, "sink-less"); err != nil {
		t.Fatal(err)
	}
	r, err := s.Repartition(Repartitioned{Name: "rp"})
	if err != nil {
		t.Fatal(err)
	}
	both := func(_ string, _ Record, _ int32) ([]int32, bool, error) { return []int32{0, 1}, true, nil }
	if err := r.To("out", Produced{Partitioner: both}); err != nil {
		t.Fatal(err)
	}
	sens := newCountingSensors()
	d, err := NewDriver(b, DriverOptions{Stores: NewMemoryStores(), Sensors: sens, WallClockMs: 10_000,
		Partitions: map[string]int32{"out": 2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Pipe("in", []byte("k"), []byte("v"), 7_000, nil); err != nil {
		t.Fatal(err)
	}
	var sink string
	for _, n := range b.Nodes() {
		want := 0
		switch {
		case n.Kind == SourceNode && !n.Internal, n.Name == "each", n.Name == "sink-less":
			want = 1
		case n.Kind == SinkNode && !n.Internal:
			want, sink = 1, n.Name
		}
		got := sens.observed["e2e/"+n.Name]
		if len(got) != want || want == 1 && got[0] != 3 {
			t.Errorf("e2e at %s = %v, want %d observation(s) of 3 (wall clock 10 s, record at 7 s)", n.Name, got, want)
		}
	}
	if sink == "" {
		t.Fatal("no sink node")
	}
}

func TestPunctuationsAreObservedByNode(t *testing.T) {
	var scheduled bool
	d, sens, nodes := sensorDriver(t, nil, func(ctx *ProcessorContext, rec Record) error {
		if !scheduled {
			scheduled = true
			if _, err := ctx.Schedule(10, StreamTime, func(int64) error { return nil }); err != nil {
				return err
			}
		}
		return nil
	})
	// Stream time 0 fires the punctuator, 5 does not, 10 and 25 do.
	for _, ts := range []int64{0, 5, 10, 25} {
		if err := d.Pipe("in", []byte("k"), []byte("v"), ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	got := sens.observed["punctuation/"+nodes[1]]
	if len(got) != 3 {
		t.Fatalf("punctuation observations %v, want 3", got)
	}
	for _, v := range got {
		if v < 0 {
			t.Errorf("negative punctuation latency %v", v)
		}
	}
}

// TestStoreLatencyIsSampled checks the sampling rate: calls 1, 65, 129, ... of each kind
// are timed, per store partition, and an iterator is timed once, at its first Close.
func TestStoreLatencyIsSampled(t *testing.T) {
	d, sens, _ := sensorDriver(t, []StoreSpec{{Name: "kv", Type: KeyValueStoreType}}, forward)
	kv, err := d.Store("kv", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2*StoreLatencySampleEvery + 1 {
		if err := kv.Put(strconv.Itoa(i), "v", 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, _, err := kv.Get("0"); err != nil {
		t.Fatal(err)
	}
	it, err := kv.Range(nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for it.Next() {
	}
	it.Close()
	it.Close()
	second, err := kv.PrefixScan("1")
	if err != nil {
		t.Fatal(err)
	}
	second.Close()
	want := map[string]int{"store/kv/put": 3, "store/kv/get": 1, "store/kv/range": 1}
	for key, n := range want {
		if got := sens.observed[key]; len(got) != n {
			t.Errorf("%s: %d observations, want %d", key, len(got), n)
		}
	}
	other, err := d.Store("kv", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Put("a", "v", 1); err != nil {
		t.Fatal(err)
	}
	if got := len(sens.observed["store/kv/put"]); got != 4 {
		t.Errorf("first put on partition 1: %d put observations, want 4 (each partition samples its first call)", got)
	}
}

func TestStoreLatencyOperationsOfEveryStoreKind(t *testing.T) {
	d, sens, _ := sensorDriver(t, []StoreSpec{
		{Name: "w", Type: WindowStoreType, WindowSize: 10, Retention: 100},
		{Name: "s", Type: SessionStoreType, Retention: 100},
		{Name: "v", Type: VersionedKeyValueStoreType, HistoryRetention: 100},
	}, forward)
	w, err := d.WindowStore("w", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Put("k", "v", 0, 1); err != nil {
		t.Fatal(err)
	}
	// Point reads do not move the range sampler: after a sample's worth of them, the
	// first iterator is still the one timed.
	for range StoreLatencySampleEvery {
		if _, _, err := w.Fetch("k", 0); err != nil {
			t.Fatal(err)
		}
	}
	wi, err := w.FetchKey("k", 0, 10, false)
	if err != nil {
		t.Fatal(err)
	}
	wi.Close()

	s, err := d.SessionStore("s", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put("k", 0, 5, "agg", 5); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.FetchSession("k", 0, 5); err != nil {
		t.Fatal(err)
	}
	si, err := s.Fetch("k", false)
	if err != nil {
		t.Fatal(err)
	}
	si.Close()

	v, err := d.VersionedStore("v", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Put("k", "v", 1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := v.Get("k"); err != nil {
		t.Fatal(err)
	}

	want := map[string]int{
		"store/w/put": 1, "store/w/get": 1, "store/w/range": 1,
		"store/s/put": 1, "store/s/get": 1, "store/s/range": 1,
		"store/v/put": 1, "store/v/get": 1,
	}
	for key, n := range want {
		if got := sens.observed[key]; len(got) != n {
			t.Errorf("%s: %d observations, want %d", key, len(got), n)
		}
	}
	if got := len(sens.observed["store/v/range"]); got != 0 {
		t.Errorf("versioned store: %d range observations, want none", got)
	}
}

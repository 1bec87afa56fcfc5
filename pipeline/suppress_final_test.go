package pipeline

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// suppress(untilWindowCloses) right after a time-windowed count takes its final results
// from the window store (suppress_final.go); with a bounded buffer (here one too large to
// fill) it keeps its own buffer as Kafka Streams does. Both must give the same records, in
// the same order, at the same points, with the same drops and the same window store.

// finalsRun is one topology under test: three partitions of "in", none idle unless the
// input says so, so the watermark is the slowest partition's stream time.
type finalsRun struct {
	t       *testing.T
	b       *StreamsBuilder
	stores  *MemoryStores
	sensors *countingSensors
	cache   int64
	topo    *Topology
	out     []string
}

type finalsCase struct {
	windows TimeWindows
	cache   int64 // record cache budget; 0: off
	fused   bool
	stores  *MemoryStores // nil: new ones
	// unlogged: the window store has no changelog, the buffer has one
	unlogged bool
	// canonical: the key and value serdes are canonical, as the built-in string and long
	// serdes are, so the fused suppression reads its results from the window store's bytes
	canonical bool
}

// canonicalBytes and canonicalInt64 are the test serdes marked canonical.
type canonicalBytes struct{ bytesSerde }

func (canonicalBytes) Canonical() {}

type canonicalInt64 struct{ int64Serde }

func (canonicalInt64) Canonical() {}

func newFinalsRun(t *testing.T, c finalsCase) *finalsRun {
	t.Helper()
	r := &finalsRun{t: t, stores: c.stores, sensors: newCountingSensors(), cache: c.cache}
	if r.stores == nil {
		r.stores = NewMemoryStores()
	}
	b := newTestBuilder()
	var count Serde = int64Serde{}
	if c.canonical {
		b, count = NewStreamsBuilder(Serdes{Key: canonicalBytes{}, Value: bytesSerde{}}), canonicalInt64{}
	}
	s, err := b.Stream([]string{"in"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := groupedByKey(t, s).WindowedBy(c.windows)
	if err != nil {
		t.Fatal(err)
	}
	table, err := w.Count(Materialized{StoreName: "counts", Given: true, LoggingDisabled: c.unlogged}, count, "")
	if err != nil {
		t.Fatal(err)
	}
	sup := Suppressed{UntilWindowCloses: true}
	if !c.fused && !c.unlogged {
		sup.Buffer.MaxRecords = math.MaxInt64
	}
	if table, err = table.Suppress(sup); err != nil {
		t.Fatal(err)
	}
	out, err := table.ToStream("")
	if err != nil {
		t.Fatal(err)
	}
	err = out.Foreach(func(rec Record) error {
		r.out = append(r.out, fmt.Sprintf("%v=%v@%d p%d %s@%d %v", rec.Key, rec.Value, rec.Timestamp, rec.Partition, rec.Topic, rec.Offset, rec.Headers))
		return nil
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	r.b = b
	r.start()
	if _, fusedProc := r.suppressor().(*finalSuppress); fusedProc != c.fused {
		t.Fatalf("suppress runs as %T", r.suppressor())
	}
	return r
}

// start builds the topology on the run's stores: at first, and as a restart after a commit.
func (r *finalsRun) start() {
	r.t.Helper()
	topo, err := r.b.Build(TopologyOptions{Collector: &Driver{}, Sensors: r.sensors, Stores: r.stores,
		SourcePartitions: map[string]int32{"in": 3}, CacheMaxBytes: r.cache})
	if err != nil {
		r.t.Fatal(err)
	}
	topo.SetAssignment([]TopicPartition{{"in", 0}, {"in", 1}, {"in", 2}})
	r.topo = topo
}

func (r *finalsRun) suppressor() Processor {
	for _, n := range r.topo.testNodes(r.t, TaskID{}) {
		if strings.HasPrefix(n.name, "KTABLE-SUPPRESS-") {
			return n.proc
		}
	}
	r.t.Fatal("no suppress node")
	return nil
}

// finalsInput is one step of the input: a record, a commit, an idle change or a restart.
type finalsInput struct {
	rec     *SourceRecord
	commit  bool
	idle    *TopicPartition
	busy    *TopicPartition
	restart bool
}

func (r *finalsRun) feed(in []finalsInput) {
	r.t.Helper()
	for _, step := range in {
		var err error
		switch {
		case step.rec != nil:
			rec := *step.rec
			err = r.topo.Process(&rec)
		case step.commit:
			err = r.topo.FlushCaches()
		case step.idle != nil:
			r.topo.SetIdle(*step.idle, true)
			err = r.topo.AdvanceWatermark()
		case step.busy != nil:
			r.topo.SetIdle(*step.busy, false)
		case step.restart:
			// Stream times and the watermark are not kept across a restart: the input
			// restarts where every partition is idle, and stays so here.
			if err = r.topo.FlushCaches(); err == nil {
				r.start()
				for p := range int32(3) {
					r.topo.SetIdle(TopicPartition{"in", p}, true)
				}
			}
		}
		if err != nil {
			r.t.Fatal(err)
		}
	}
}

// windows lists every window the window store shows, partition by partition.
func (r *finalsRun) windows() []string {
	r.t.Helper()
	var out []string
	for p := range int32(3) {
		ws, err := r.topo.WindowStore("counts", p)
		if err != nil {
			r.t.Fatal(err)
		}
		it := ws.All(false)
		for it.Next() {
			w := it.Window()
			out = append(out, fmt.Sprintf("p%d %v@%d/%d=%v@%d", p, w.Key, w.Start, w.End, w.Value, w.Timestamp))
		}
		if err := it.Err(); err != nil {
			r.t.Fatal(err)
		}
		it.Close()
	}
	return out
}

// randomFinalsInput: keys on three partitions, each partition with its own clock, one of
// them slower, so the watermark lags; records out of order within and beyond the grace
// (late), some with headers; commits, idle spells and (if asked) restarts in between.
func randomFinalsInput(rng *rand.Rand, w TimeWindows, n int, restarts bool) []finalsInput {
	clock := [3]int64{}
	offsets := [3]int64{}
	idle := [3]bool{}
	// fresh: no record of the partition since the start or the last restart.
	fresh := [3]bool{true, true, true}
	var in []finalsInput
	for i := range n {
		p := int32(rng.Intn(3))
		if p == 2 && rng.Intn(3) > 0 {
			p = int32(rng.Intn(2)) // partition 2 lags behind
		}
		tp := TopicPartition{"in", p}
		if idle[p] {
			idle[p] = false
			in = append(in, finalsInput{busy: &tp})
		}
		clock[p] += int64(rng.Intn(int(w.Advance) + 2))
		ts := clock[p]
		if rng.Intn(8) == 0 && !fresh[p] {
			ts = max(0, ts-int64(rng.Intn(int(w.Size+w.Grace)+5)))
		}
		fresh[p] = false
		key := fmt.Sprintf("k%d", rng.Intn(4)*3+int(p)) // a key stays on its partition
		rec := &SourceRecord{Topic: "in", Partition: p, Offset: offsets[p], Timestamp: ts, Key: []byte(key), Value: []byte("v")}
		offsets[p]++
		if rng.Intn(5) == 0 {
			rec.Headers = Headers{{Key: "h", Value: []byte(fmt.Sprint(i))}}
		}
		in = append(in, finalsInput{rec: rec})
		switch x := rng.Intn(40); {
		case x < 3:
			in = append(in, finalsInput{commit: true})
		case x == 3:
			q := int32(rng.Intn(3))
			idle[q] = true
			in = append(in, finalsInput{idle: &TopicPartition{"in", q}})
		case x == 4 && restarts && fresh == [3]bool{}:
			// A restart forgets the stream times and the watermark: it comes where every
			// partition is idle (the watermark their largest stream time), and each
			// partition's next record is in order, so that the stream times it rebuilds
			// are those it forgot.
			for q := range int32(3) {
				idle[q] = true
				in = append(in, finalsInput{idle: &TopicPartition{"in", q}})
			}
			in = append(in, finalsInput{restart: true})
			fresh = [3]bool{true, true, true}
		}
	}
	// Every partition idle: the watermark goes to the largest stream time.
	for p := range int32(3) {
		in = append(in, finalsInput{idle: &TopicPartition{"in", p}})
	}
	return in
}

// randomFinalsCase is a seed's windows, cache budget and input.
func randomFinalsCase(seed int64, restarts bool) (finalsCase, []finalsInput, string) {
	rng := rand.New(rand.NewSource(seed))
	size := int64(5 + rng.Intn(20))
	c := finalsCase{windows: TimeWindows{Size: size, Advance: 1 + rng.Int63n(size), Grace: rng.Int63n(12)},
		cache: []int64{0, 200, 1 << 20}[rng.Intn(3)]}
	in := randomFinalsInput(rng, c.windows, 300, restarts)
	c.canonical = rng.Intn(2) == 0
	return c, in, fmt.Sprintf("seed %d, %+v, cache %d, canonical serdes %v", seed, c.windows, c.cache, c.canonical)
}

func TestFinalResultsFromTheWindowStoreEqualSuppressBuffer(t *testing.T) {
	for seed := range int64(60) {
		c, in, what := randomFinalsCase(seed, false)
		buffered := newFinalsRun(t, c)
		c.fused = true
		fused := newFinalsRun(t, c)
		fused.feed(in)
		buffered.feed(in)
		for _, part := range fused.suppressor().(*finalSuppress).parts {
			if part.canonical != c.canonical {
				t.Fatalf("%s: partition %d reads its results through canonical serdes: %v", what, part.partition, part.canonical)
			}
		}
		if !reflect.DeepEqual(fused.out, buffered.out) {
			t.Fatalf("%s: final results\n%s\nwant (suppress's buffer)\n%s", what, strings.Join(fused.out, "\n"), strings.Join(buffered.out, "\n"))
		}
		if !reflect.DeepEqual(fused.sensors.dropped, buffered.sensors.dropped) {
			t.Fatalf("%s: drops %v, want %v", what, fused.sensors.dropped, buffered.sensors.dropped)
		}
		if got, want := fused.windows(), buffered.windows(); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: window store\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// Across restarts (after a commit, at a quiet moment) the final results are the same as
// without them, each window's once, with its latest update's record context, in the same
// order within each task (tasks emit on their own: a restart may change which one emits
// first).
func TestFinalResultsFromTheWindowStoreSurviveRestarts(t *testing.T) {
	for seed := range int64(60) {
		c, in, what := randomFinalsCase(seed, true)
		c.fused = true
		var straight []finalsInput
		for _, step := range in {
			if !step.restart {
				straight = append(straight, step)
			}
		}
		restarted, once := newFinalsRun(t, c), newFinalsRun(t, c)
		restarted.feed(in)
		once.feed(straight)
		if got, want := byTask(restarted.out), byTask(once.out); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: final results with restarts\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// byTask orders results by their partition (their task), keeping each task's in order.
func byTask(out []string) []string {
	s := slices.Clone(out)
	slices.SortStableFunc(s, func(a, b string) int { return strings.Compare(strings.Fields(a)[1], strings.Fields(b)[1]) })
	return s
}

// A window the window store no longer shows (its partition's stream time moved past its
// retention while another partition held the watermark back) is still emitted after a
// restart: the buffer store holds every open window, in Kafka Streams' layout, and nothing
// else.
func TestFinalResultBehindTheWindowStoreRetentionSurvivesRestart(t *testing.T) {
	for _, fused := range []bool{true, false} {
		r := newFinalsRun(t, finalsCase{windows: TimeWindows{Size: 10, Advance: 10}, fused: fused})
		rec := func(p int32, key string, ts int64) finalsInput {
			return finalsInput{rec: &SourceRecord{Topic: "in", Partition: p, Offset: ts, Timestamp: ts, Key: []byte(key), Value: []byte("v")}}
		}
		r.feed([]finalsInput{rec(0, "k0", 5), rec(1, "k1", 1), rec(0, "k0", 25), {restart: true}})
		for p := range int32(2) {
			r.topo.SetIdle(TopicPartition{"in", p}, false)
		}
		if got := r.windows(); !reflect.DeepEqual(got, []string{"p0 k0@20/30=1@25", "p1 k1@0/10=1@1"}) {
			t.Fatalf("window store %q: [k0@0/10] should be past its retention", got)
		}
		if fused {
			buf, err := r.topo.Store(r.suppressor().(*finalSuppress).store, 0)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			it := buf.bytes.Range(nil, nil, false)
			for it.Next() {
				keys = append(keys, fmt.Sprintf("%x", it.Key()))
				if _, err := decodeBufferedChange(it.Value()); err != nil {
					t.Errorf("buffer entry %x: %v", it.Key(), err)
				}
			}
			it.Close()
			if want := []string{"6b300000000000000000", "6b300000000000000014"}; !reflect.DeepEqual(keys, want) {
				t.Errorf("the buffer store holds %q, want the open windows %q", keys, want)
			}
		}
		r.feed([]finalsInput{rec(0, "k0", 31), rec(1, "k1", 30)})
		// Each task emits its own.
		want := []string{"[k0@0/10]=1@5 p0 in@5 []", "[k0@20/30]=1@25 p0 in@25 []", "[k1@0/10]=1@1 p1 in@1 []"}
		if !reflect.DeepEqual(r.out, want) {
			t.Fatalf("fused %v: final results %q, want %q", fused, r.out, want)
		}
	}
}

// onlyPartition0 makes partitions 1 and 2 idle: the watermark is partition 0's time.
var onlyPartition0 = []finalsInput{{idle: &TopicPartition{"in", 1}}, {idle: &TopicPartition{"in", 2}}}

// A suppression that keeps its own buffer (a bounded one, or old values asked for
// downstream) takes over the buffer store of one that takes its final results from the
// window store: the same layout, Kafka Streams'.
func TestSuppressTakesOverFinalResultsFromTheWindowStore(t *testing.T) {
	w := TimeWindows{Size: 10, Advance: 10}
	fused := newFinalsRun(t, finalsCase{windows: w, fused: true})
	rec := func(ts int64) finalsInput {
		return finalsInput{rec: &SourceRecord{Topic: "in", Partition: 0, Offset: ts, Timestamp: ts, Key: []byte("k"), Value: []byte("v")}}
	}
	fused.feed([]finalsInput{onlyPartition0[0], onlyPartition0[1], rec(5), rec(7), {commit: true}})
	buffered := newFinalsRun(t, finalsCase{windows: w, stores: fused.stores})
	buffered.feed([]finalsInput{onlyPartition0[0], onlyPartition0[1], rec(8), rec(25)})
	if want := []string{"[k@0/10]=3@8 p0 in@8 []"}; !reflect.DeepEqual(buffered.out, want) {
		t.Fatalf("final results %q, want %q", buffered.out, want)
	}
}

// State written before issue 29 (the emitted-up-to marker in the buffer store, the open
// windows in the window store) is read, and rewritten in Kafka Streams' layout at the next
// commit barrier; a suppression keeping its own buffer refuses it until then.
func TestFinalResultsMarkerOfEarlierStateIsRewritten(t *testing.T) {
	w := TimeWindows{Size: 10, Advance: 10}
	old := newFinalsRun(t, finalsCase{windows: w, fused: true})
	rec := func(ts int64) finalsInput {
		return finalsInput{rec: &SourceRecord{Topic: "in", Partition: 0, Offset: ts, Timestamp: ts, Key: []byte("k"), Value: []byte("v")}}
	}
	old.feed([]finalsInput{rec(5), rec(13)})
	buf, err := old.topo.Store(old.suppressor().(*finalSuppress).store, 0)
	if err != nil {
		t.Fatal(err)
	}
	// What an agent before issue 29 left: windows [0,10) closed, [10,20) open in the window
	// store only, the marker at 10.
	for _, k := range [][]byte{[]byte("k\x00\x00\x00\x00\x00\x00\x00\x00"), []byte("k\x00\x00\x00\x00\x00\x00\x00\x0a")} {
		if err := buf.bytes.Put(k, nil, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := buf.bytes.Put(finalMarkerKey, binary.BigEndian.AppendUint64(nil, 10), -1, nil); err != nil {
		t.Fatal(err)
	}
	buffered := newFinalsRun(t, finalsCase{windows: w, stores: old.stores})
	// Another key: the aggregation's write of it stays in these stores, which do not abort.
	r := SourceRecord{Topic: "in", Partition: 0, Offset: 14, Timestamp: 14, Key: []byte("j"), Value: []byte("v")}
	if err := buffered.topo.Process(&r); err == nil || !strings.Contains(err.Error(), "not supported yet") {
		t.Fatalf("a suppression keeping its own buffer: got %v, want the not-supported error", err)
	}
	restarted := newFinalsRun(t, finalsCase{windows: w, fused: true, stores: old.stores})
	restarted.feed([]finalsInput{onlyPartition0[0], onlyPartition0[1], rec(14), {commit: true}})
	buf, err = restarted.topo.Store(restarted.suppressor().(*finalSuppress).store, 0)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	it := buf.bytes.Range(nil, nil, false)
	for it.Next() {
		keys = append(keys, fmt.Sprintf("%x", it.Key()))
	}
	it.Close()
	if want := []string{"6a000000000000000a", "6b000000000000000a"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("the buffer store holds %q, want the open windows %q and no marker", keys, want)
	}
	restarted.feed([]finalsInput{rec(25)})
	// The window read back from the window store has no record context.
	want := []string{"[j@10/20]=1@14 p0 @-1 []", "[k@10/20]=2@14 p0 in@14 []"}
	if !reflect.DeepEqual(restarted.out, want) {
		t.Fatalf("final results %q, want %q", restarted.out, want)
	}
}

// Of two suppressions of one windowed table, the first takes its final results from the
// window store and the second keeps its own buffer: the same results.
func TestTwoSuppressionsOfOneWindowedTable(t *testing.T) {
	b := newTestBuilder()
	s, err := b.Stream([]string{"in"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := groupedByKey(t, s).WindowedBy(TimeWindows{Size: 10, Advance: 10})
	if err != nil {
		t.Fatal(err)
	}
	table, err := w.Count(Materialized{}, int64Serde{}, "")
	if err != nil {
		t.Fatal(err)
	}
	outs := make([][]string, 2)
	for i := range outs {
		final, err := table.Suppress(Suppressed{UntilWindowCloses: true})
		if err != nil {
			t.Fatal(err)
		}
		st, err := final.ToStream("")
		if err != nil {
			t.Fatal(err)
		}
		err = st.Foreach(func(r Record) error {
			outs[i] = append(outs[i], fmt.Sprintf("%v=%v", r.Key, r.Value))
			return nil
		}, "")
		if err != nil {
			t.Fatal(err)
		}
	}
	d, err := NewDriver(b, DriverOptions{Stores: NewMemoryStores()})
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range []int64{1, 15} {
		if err := d.Pipe("in", []byte("k"), []byte("v"), ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	var kinds []string
	for _, n := range d.topo.testNodes(t, TaskID{}) {
		if strings.HasPrefix(n.name, "KTABLE-SUPPRESS-") {
			kinds = append(kinds, fmt.Sprintf("%T", n.proc))
		}
	}
	if want := []string{"*pipeline.finalSuppress", "*pipeline.suppressProc"}; !reflect.DeepEqual(kinds, want) {
		t.Fatalf("suppressions %v, want %v", kinds, want)
	}
	for i, out := range outs {
		if want := []string{"[k@0/10]=1"}; !reflect.DeepEqual(out, want) {
			t.Fatalf("suppression %d: %q, want %q", i, out, want)
		}
	}
}

// A window store without a changelog cannot give a standby the open windows that a logged
// buffer would: suppress keeps its own buffer then.
func TestSuppressKeepsItsBufferOverAnUnloggedWindowStore(t *testing.T) {
	newFinalsRun(t, finalsCase{windows: TimeWindows{Size: 10, Advance: 10}, unlogged: true})
}

// With canonical serdes the due windows sort by their window store keys as their buffer
// store keys (key + window start) would, also where one key is a prefix of another.
func TestCanonicalFinalResultsSortAsTheirBufferKeys(t *testing.T) {
	keys := []string{"a", "a\x00", "a\x00\x00\x00\x00\x00\x00\x00\x00", "a\x00\x00\x00\x00\x00\x00\x00\x06", "a\x00\x00\x00\x00\x00\x00\x00\x05\x00",
		"a\xff", "ab", "b", ""}
	for _, start := range []int64{0, 5, 1 << 40, -1} {
		for _, x := range keys {
			for _, y := range keys {
				a := dueFinal{kb: x, w: &openWindow{start: start}}
				b := dueFinal{kb: y, w: &openWindow{start: start}}
				suffix := string(binary.BigEndian.AppendUint64(nil, uint64(start)))
				if got, want := compareBufferKeys(a, b, true), strings.Compare(x+suffix, y+suffix); got != want {
					t.Errorf("start %d: %q against %q: %d, want %d", start, x, y, got, want)
				}
			}
		}
	}
}

// With canonical serdes a final result is read from the window store's bytes once (the
// key's bytes, the windowed key, the value), not sent through the buffer's serdes and back.
func TestCanonicalFinalResultsSkipTheBufferSerdes(t *testing.T) {
	r := newFinalsRun(t, finalsCase{windows: TimeWindows{Size: 10, Advance: 10}, fused: true, canonical: true})
	r.feed([]finalsInput{{rec: &SourceRecord{Topic: "in", Partition: 0, Timestamp: 3, Key: []byte("key"), Value: []byte("v")}}})
	fs := r.suppressor().(*finalSuppress)
	part := fs.parts[0]
	if !part.canonical {
		t.Fatal("the partition does not read its results through canonical serdes")
	}
	var d dueFinal
	for kb, ow := range part.byEnd[10] {
		d = dueFinal{end: 10, partition: 0, kb: kb, w: ow}
	}
	ow := *d.w
	ow.value = binary.BigEndian.AppendUint64(nil, 1000) // a count that boxes
	d.w = &ow
	key, v, err := fs.result(part, d)
	if err != nil {
		t.Fatal(err)
	}
	// the key's bytes as a string, boxed, the windowed key boxed, the count boxed
	if n := testing.AllocsPerRun(100, func() { _, _, _ = fs.result(part, d) }); n > 4 {
		t.Errorf("%v allocations per final result, want at most 4", n)
	}
	part.canonical = false
	if _, err := fs.bufferKey(part, d.end, d.w); err != nil {
		t.Fatal(err)
	}
	wantKey, wantV, err := fs.result(part, d)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v allocations through the buffer's serdes", testing.AllocsPerRun(100, func() { _, _, _ = fs.result(part, d) }))
	if !reflect.DeepEqual(key, wantKey) || !reflect.DeepEqual(v, wantV) {
		t.Fatalf("canonical result %v=%v, through the buffer's serdes %v=%v", key, v, wantKey, wantV)
	}
}

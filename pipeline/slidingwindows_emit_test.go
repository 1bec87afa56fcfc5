package pipeline

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"testing"
)

// slidingCount builds in → groupByKey → sliding windows → count → out, emitting on window
// close or on every update; it returns the builder and the store name.
func slidingCount(t *testing.T, w SlidingWindows, onClose bool) (*StreamsBuilder, string) {
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
	sw, err := g.WindowedBySliding(w)
	if err != nil {
		t.Fatal(err)
	}
	sw.EmitOnWindowClose(onClose)
	table, err := sw.Count(Materialized{}, int64Serde{}, "")
	if err != nil {
		t.Fatal(err)
	}
	out, err := table.ToStream("")
	if err != nil {
		t.Fatal(err)
	}
	if err := out.To("out", Produced{}); err != nil {
		t.Fatal(err)
	}
	return b, table.StoreName()
}

type slidingEvent struct {
	partition int32
	key       string
	ts        int64
}

func sendSliding(t *testing.T, d *Driver, evs ...slidingEvent) {
	t.Helper()
	for _, e := range evs {
		if err := d.topo.Process(&SourceRecord{Topic: "in", Partition: e.partition, Timestamp: e.ts, Key: []byte(e.key), Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
	}
}

// readSliding returns the outputs as key[start]=count@timestamp.
func readSliding(d *Driver) []string {
	var out []string
	for {
		r, ok := d.ReadOutput("out")
		if !ok {
			return out
		}
		n := len(r.Key) - 8
		out = append(out, fmt.Sprintf("%s[%d]=%d@%d", r.Key[:n], binary.BigEndian.Uint64(r.Key[n:]),
			binary.BigEndian.Uint64(r.Value), r.Timestamp))
	}
}

// On one partition the watermark is the operator's stream time, so each final result is
// the last update emit-on-update forwards for a window the watermark has closed: every
// such window once, in start order, and no other.
func TestSlidingEmitOnCloseIsLastUpdateOfClosedWindows(t *testing.T) {
	w := SlidingWindows{TimeDifference: 10, Grace: 5}
	var evs []slidingEvent
	for _, e := range []struct {
		k  string
		ts int64
	}{{"a", 0}, {"a", 5}, {"b", 3}, {"a", 12}, {"b", 30}, {"a", 8}, {"a", 25}, {"a", 40}, {"b", 41},
		{"a", 33}, {"a", 60}, {"a", 49}, {"b", 100}, {"a", 101}} {
		evs = append(evs, slidingEvent{0, e.k, e.ts})
	}
	run := func(onClose bool) []string {
		b, _ := slidingCount(t, w, onClose)
		d, err := NewDriver(b, DriverOptions{Stores: NewMemoryStores()})
		if err != nil {
			t.Fatal(err)
		}
		sendSliding(t, d, evs...)
		return readSliding(d)
	}
	upper := int64(101 - 5 - 10 - 1) // the last start the final watermark closes
	last := map[string]string{}
	for _, u := range run(false) {
		var k string
		var start int64
		fmt.Sscanf(u, "%1s[%d]", &k, &start)
		if start > upper {
			continue
		}
		last[fmt.Sprintf("%s[%d]", k, start)] = u
	}
	got := run(true)
	if len(last) < 10 {
		t.Fatalf("only %d closed windows: %v", len(last), last)
	}
	if len(got) != len(last) {
		t.Fatalf("emitted %d windows %v, want the %d closed ones %v", len(got), got, len(last), last)
	}
	prevStart := int64(-1)
	for _, g := range got {
		var k string
		var start int64
		fmt.Sscanf(g, "%1s[%d]", &k, &start)
		if want := last[fmt.Sprintf("%s[%d]", k, start)]; g != want {
			t.Errorf("final %s, want the last update %q", g, want)
		}
		if start < prevStart {
			t.Errorf("%s emitted after start %d", g, prevStart)
		}
		prevStart = start
	}
}

// An emitted window that a later record's left window still needs stays stored; windows no
// open window can need are deleted; a record for windows the watermark has closed is
// dropped per window with reason window-closed, though its operator's stream time accepts
// it.
func TestSlidingEmitOnCloseKeepsNeededWindowsAndDropsClosed(t *testing.T) {
	b, storeName := slidingCount(t, SlidingWindows{TimeDifference: 10}, true)
	sens := newCountingSensors()
	d, err := NewDriver(b, DriverOptions{Stores: NewMemoryStores(), Sensors: sens, Partitions: map[string]int32{"in": 3}})
	if err != nil {
		t.Fatal(err)
	}
	// The driver's watermark is the largest partition stream time: partition 2 moves it.
	sendSliding(t, d, slidingEvent{0, "k", 20}, slidingEvent{2, "w", 25})
	if got, want := readSliding(d), []string{"k[10]=1@20"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("at watermark 25: %v, want %v", got, want)
	}
	// [18, 28] holds 20 and 28: it is seeded from the emitted [10, 20]. Stream time 28 then
	// moves the watermark to 28, closing w's [15, 25].
	sendSliding(t, d, slidingEvent{0, "k", 28}, slidingEvent{2, "w", 100})
	if got, want := readSliding(d), []string{"w[15]=1@25", "k[18]=2@28", "k[21]=1@28"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("at watermark 100: %v, want %v", got, want)
	}
	store, err := d.topo.WindowStore(storeName, 0)
	if err != nil {
		t.Fatal(err)
	}
	it := store.FetchAll(0, 1000, false)
	var kept []int64
	for it.Next() {
		kept = append(kept, it.Window().Start)
	}
	it.Close()
	// Upper is 89: starts before 79 are deleted.
	if len(kept) != 0 {
		t.Errorf("windows left in partition 0: %v", kept)
	}
	// Stream time 30 of partition 0 accepts it; the watermark has closed its left window
	// [20, 30], the only window it makes now that the older ones are deleted.
	sendSliding(t, d, slidingEvent{0, "k", 30})
	if got := readSliding(d); len(got) != 0 {
		t.Fatalf("a closed window was revised: %v", got)
	}
	if sens.dropped["window-closed"] != 1 || sens.dropped["late"] != 0 {
		t.Fatalf("drops %v, want 1 window-closed", sens.dropped)
	}
}

// After a restart, windows restored on a partition that sees no record close too, once,
// and the windows already emitted are not emitted again.
func TestSlidingEmitOnCloseAfterRestart(t *testing.T) {
	stores := NewMemoryStores()
	start := func() *Driver {
		b, _ := slidingCount(t, SlidingWindows{TimeDifference: 10}, true)
		d, err := NewDriver(b, DriverOptions{Stores: stores, Partitions: map[string]int32{"in": 2}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := start()
	sendSliding(t, d, slidingEvent{1, "k", 0}, slidingEvent{1, "k", 3}, slidingEvent{1, "k", 30})
	if got, want := readSliding(d), []string{"k[0]=2@3", "k[1]=1@3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("before the restart: %v, want %v", got, want)
	}
	d = start()
	sendSliding(t, d, slidingEvent{0, "z", 100})
	if got, want := readSliding(d), []string{"k[20]=1@30"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after the restart: %v, want %v", got, want)
	}
}

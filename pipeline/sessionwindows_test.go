package pipeline

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestSessionWindowsValidate(t *testing.T) {
	for _, c := range []struct {
		w    SessionWindows
		want string
	}{
		{SessionWindows{Gap: 0}, "gap must be larger than zero"},
		{SessionWindows{Gap: -1}, "gap must be larger than zero"},
		{SessionWindows{Gap: 1, Grace: -1}, "grace period must not be negative"},
		{SessionWindows{Gap: 1}, ""},
	} {
		err := c.w.Validate()
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.w, err, c.want)
		}
	}
}

// Kafka's SessionKeySchema: [key][8-byte BE end][8-byte BE start].
func TestSessionWindowedSerdeBytes(t *testing.T) {
	s := SessionWindowedSerde{Inner: bytesSerde{}}
	want := []byte{'k', 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 3}
	for _, in := range []any{
		Windowed{Key: "k", Start: 3, End: 20},
		map[string]any{"key": "k", "window": map[string]any{"start": int64(3), "end": int64(20)}},
	} {
		b, err := s.Serialize("t", nil, in)
		if err != nil || !bytes.Equal(b, want) {
			t.Fatalf("serialize %v = %x, %v; want %x", in, b, err, want)
		}
	}
	v, err := s.Deserialize("t", nil, want)
	if err != nil || v != (Windowed{Key: "k", Start: 3, End: 20}) {
		t.Fatalf("deserialize = %v, %v", v, err)
	}
	if _, err := s.Deserialize("t", nil, want[:15]); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Fatalf("short key: %v", err)
	}
	if _, err := s.Serialize("t", nil, map[string]any{"key": "k", "window": map[string]any{"start": int64(3)}}); err == nil {
		t.Fatal("a table key without window end serialized")
	}
	if _, err := s.Serialize("t", nil, 42); err == nil {
		t.Fatal("a number serialized as a session key")
	}
}

// sessionCountOnClose builds in → groupByKey → sessions (gap 10, no grace) → count with
// emit on close → out.
func sessionCountOnClose(t *testing.T) *StreamsBuilder {
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
	w, err := g.WindowedBySession(SessionWindows{Gap: 10})
	if err != nil {
		t.Fatal(err)
	}
	w.EmitOnWindowClose(true)
	table, err := w.Count(Materialized{}, int64Serde{}, "")
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
	return b
}

type int64Serde struct{}

func (int64Serde) Name() string { return "long" }
func (int64Serde) Serialize(_ string, _ Headers, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	return binary.BigEndian.AppendUint64(nil, uint64(v.(int64))), nil
}
func (int64Serde) Deserialize(_ string, _ Headers, b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// After a restart, sessions restored on a partition that sees no record close too, once;
// a record for a session the watermark has closed is dropped.
func TestSessionEmitOnCloseAfterRestart(t *testing.T) {
	stores := NewMemoryStores()
	start := func() *Driver {
		d, err := NewDriver(sessionCountOnClose(t), DriverOptions{Stores: stores, Partitions: map[string]int32{"in": 2}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	send := func(d *Driver, p int32, k string, ts int64) {
		t.Helper()
		if err := d.topo.Process(&SourceRecord{Topic: "in", Partition: p, Timestamp: ts, Key: []byte(k), Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(d *Driver) []string {
		var out []string
		for {
			r, ok := d.ReadOutput("out")
			if !ok {
				return out
			}
			n := len(r.Key) - 16
			out = append(out, fmt.Sprintf("%s[%d,%d]=%d@%d", r.Key[:n], binary.BigEndian.Uint64(r.Key[n+8:]),
				binary.BigEndian.Uint64(r.Key[n:n+8]), binary.BigEndian.Uint64(r.Value), r.Timestamp))
		}
	}
	d := start()
	send(d, 1, "k", 0)
	send(d, 1, "k", 3)
	if got := read(d); len(got) != 0 {
		t.Fatalf("before the restart: %v", got)
	}
	d = start()
	send(d, 0, "z", 100)
	if got, want := read(d), []string{"k[0,3]=2@3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after the restart: %v, want %v", got, want)
	}
	send(d, 1, "k", 5) // its own partition's stream time accepts it; the watermark does not
	send(d, 0, "z", 200)
	if got, want := read(d), []string{"z[100,100]=1@100"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("at 200: %v, want %v", got, want)
	}
}

// sliceSerde serialises a []byte as itself, spare capacity included, as the bytes serde does.
type sliceSerde struct{ bytesSerde }

func (sliceSerde) Serialize(_ string, _ Headers, v any) ([]byte, error) { return v.([]byte), nil }

// A windowed key's bytes stay as serialised when the same inner key, with room to grow in
// place, is serialised again for another window (a hopping window's record serialises its
// key once per window, and the sink keeps each key's bytes until they are sent).
func TestWindowedSerdesDoNotWriteIntoTheKey(t *testing.T) {
	key := append(make([]byte, 0, 64), "k"...)
	serdes := []Serde{TimeWindowedSerde{Inner: sliceSerde{}, Size: 10}, SessionWindowedSerde{Inner: sliceSerde{}}}
	for _, s := range serdes {
		first, err := s.Serialize("t", nil, Windowed{Key: key, Start: 1, End: 11})
		if err != nil {
			t.Fatal(err)
		}
		want := string(first)
		if _, err := s.Serialize("t", nil, Windowed{Key: key, Start: 2, End: 12}); err != nil {
			t.Fatal(err)
		}
		if string(first) != want || string(key) != "k" {
			t.Errorf("%s: the first window's key became %x (was %x), the inner key %q", s.Name(), first, want, key)
		}
	}
}

// Session updates and the tombstones of merged-away sessions carry none of the input
// record's headers: KStreamSessionWindowAggregate forwards a new Record(key, change, end).
func TestSessionResultsCarryNoHeaders(t *testing.T) {
	b := newTestBuilder()
	s, err := b.Stream([]string{"in"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.GroupByKey(Grouped{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := g.WindowedBySession(SessionWindows{Gap: 10})
	if err != nil {
		t.Fatal(err)
	}
	table, err := w.Count(Materialized{}, int64Serde{}, "")
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
	d, err := NewDriver(b, DriverOptions{Stores: NewMemoryStores()})
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range []int64{0, 5} { // the second merges the first session away
		if err := d.Pipe("in", []byte("k"), []byte("v"), ts, Headers{{Key: "h", Value: []byte("x")}}); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for r, ok := d.ReadOutput("out"); ok; r, ok = d.ReadOutput("out") {
		n++
		if len(r.Headers) != 0 {
			t.Errorf("result %d (value %x at %d) has headers %v", n, r.Value, r.Timestamp, r.Headers)
		}
	}
	if n != 3 { // [0,0]=1, the tombstone of [0,0], [0,5]=2
		t.Fatalf("%d results, want 3", n)
	}
}

// A session the watermark has not closed stays stored past the store's retention (gap +
// grace, on the store's stream time, the largest end put) and is emitted once it closes;
// an emitted session is deleted (see TestTimeWindowsEmitOnCloseDeleteEmittedWindows).
func TestSessionEmitOnCloseHoldsSessionsPastTheRetention(t *testing.T) {
	b := sessionCountOnClose(t)
	out := &Driver{outputs: map[string][]OutputRecord{}}
	topo, err := b.Build(TopologyOptions{Collector: out, Stores: NewMemoryStores(), SourcePartitions: map[string]int32{"in": 2}})
	if err != nil {
		t.Fatal(err)
	}
	store := b.Stores()[0].Name
	topo.SetAssignment([]TopicPartition{{"in", 0}, {"in", 1}})
	stored := func() []string {
		t.Helper()
		s, err := topo.SessionStore(store, 0)
		if err != nil {
			t.Fatal(err)
		}
		it, err := s.FindSessionsRange(nil, nil, 0, math.MaxInt64, false)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		var got []string
		for it.Next() {
			got = append(got, fmt.Sprintf("%v[%d,%d]", it.Session().Key, it.Session().Start, it.Session().End))
		}
		return got
	}
	sendTo(t, topo, 1, "z", 0) // partition 1 holds the watermark at 0
	sendTo(t, topo, 0, "k", 5)
	sendTo(t, topo, 0, "k", 30) // the store's stream time 30 expires k[5,5]: 5 < 30 − 10 + 1
	if got, want := stored(), []string{"k[30,30]"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("partition 0 shows %v, want %v", got, want)
	}
	if err := topo.FlushCaches(); err != nil { // a commit barrier
		t.Fatal(err)
	}
	topo.SetIdle(TopicPartition{"in", 0}, true)
	topo.SetIdle(TopicPartition{"in", 1}, true)
	sendTo(t, topo, 1, "z", 45) // the watermark 45 closes k[5,5] and k[30,30] (end + 10 < 45)
	var emitted []string
	for r, ok := out.ReadOutput("out"); ok; r, ok = out.ReadOutput("out") {
		n := len(r.Key) - 16
		emitted = append(emitted, fmt.Sprintf("%s[%d,%d]", r.Key[:n], binary.BigEndian.Uint64(r.Key[n+8:]), binary.BigEndian.Uint64(r.Key[n:n+8])))
	}
	if want := []string{"k[5,5]", "k[30,30]", "z[0,0]"}; !reflect.DeepEqual(emitted, want) {
		t.Fatalf("emitted %v, want %v", emitted, want)
	}
	if got := stored(); len(got) != 0 {
		t.Fatalf("partition 0 shows %v after emitting", got)
	}
}

// KStreamSessionWindowAggregate accepts a session ending at stream time − gap − grace, which
// the store's retention (gap + grace) has just expired: the store keeps it, as Kafka's
// RocksDB store does, and it is emitted when it closes.
func TestSessionEmitOnCloseKeepsASessionAcceptedAtTheRetention(t *testing.T) {
	d, err := NewDriver(sessionCountOnClose(t), DriverOptions{Stores: NewMemoryStores()})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		key string
		ts  int64
	}{{"k", 30}, {"j", 20}, {"z", 100}} { // 20 is not before 30 − 10: accepted
		if err := d.Pipe("in", []byte(r.key), []byte("v"), r.ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	var emitted []string
	for r, ok := d.ReadOutput("out"); ok; r, ok = d.ReadOutput("out") {
		n := len(r.Key) - 16
		emitted = append(emitted, fmt.Sprintf("%s[%d,%d]", r.Key[:n], binary.BigEndian.Uint64(r.Key[n+8:]), binary.BigEndian.Uint64(r.Key[n:n+8])))
	}
	if want := []string{"j[20,20]", "k[30,30]"}; !reflect.DeepEqual(emitted, want) {
		t.Fatalf("emitted %v, want %v", emitted, want)
	}
}

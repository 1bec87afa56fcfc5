package pipeline

import (
	"fmt"
	"strings"
	"testing"
)

// globalJoinFixture: stream "orders" joined (inner or left) with global table "products";
// the mapper takes the text after the comma of the stream value ("" maps to nil) and the
// joiner prints mappedKey|streamKey|streamValue|tableValue.
func globalJoinFixture(t *testing.T, left bool) (*Driver, *countingSensors) {
	t.Helper()
	b := newTestBuilder()
	s, err := b.Stream([]string{"orders"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := b.GlobalTable("products", Consumed{}, Materialized{})
	if err != nil {
		t.Fatal(err)
	}
	mapper := func(rec Record) (any, error) {
		_, after, _ := strings.Cut(rec.Value.(string), ",")
		if after == "" {
			return nil, nil
		}
		return after, nil
	}
	joiner := func(rec Record, mapped, tv any) (any, error) {
		return fmt.Sprintf("%v|%v|%v|%v", mapped, rec.Key, rec.Value, tv), nil
	}
	join := s.JoinGlobal
	if left {
		join = s.LeftJoinGlobal
	}
	j, err := join(g, mapper, joiner, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := j.To("out", Produced{}); err != nil {
		t.Fatal(err)
	}
	sens := newCountingSensors()
	d, err := NewDriver(b, DriverOptions{Sensors: sens, Stores: NewMemoryStores()})
	if err != nil {
		t.Fatal(err)
	}
	return d, sens
}

func pipeGlobal(t *testing.T, d *Driver, partition int32, offset int64, key, value []byte) {
	t.Helper()
	if err := d.topo.ProcessGlobal(SourceRecord{Topic: "products", Partition: partition, Offset: offset, Timestamp: 1, Key: key, Value: value}); err != nil {
		t.Fatal(err)
	}
}

func outputs(d *Driver) []string {
	var out []string
	for {
		r, ok := d.ReadOutput("out")
		if !ok {
			return out
		}
		k := "<nil>"
		if r.Key != nil {
			k = string(r.Key)
		}
		out = append(out, k+"="+string(r.Value))
	}
}

func TestGlobalJoinKIP1340Vector(t *testing.T) {
	d, _ := globalJoinFixture(t, false)
	pipeGlobal(t, d, 0, 0, []byte("FKey0"), []byte("Y0"))
	if err := d.Pipe("orders", []byte("0"), []byte("X0,FKey0"), 5, nil); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(outputs(d), " ")
	if got != "0=FKey0|0|X0,FKey0|Y0" {
		t.Fatalf("got %q", got)
	}
}

func TestGlobalInnerJoinNullCases(t *testing.T) {
	d, sens := globalJoinFixture(t, false)
	pipeGlobal(t, d, 0, 0, []byte("p1"), []byte("T1"))
	_ = d.Pipe("orders", []byte("k1"), []byte("a,"), 1, nil)       // nil mapped key: dropped, counted
	_ = d.Pipe("orders", []byte("k2"), nil, 2, nil)                // nil value: dropped, counted
	_ = d.Pipe("orders", []byte("k3"), []byte("b,absent"), 3, nil) // no table value: nothing, not counted
	_ = d.Pipe("orders", nil, []byte("c,p1"), 4, nil)              // nil stream key, mapped key joins
	got := strings.Join(outputs(d), " ")
	if got != "<nil>=p1|<nil>|c,p1|T1" {
		t.Fatalf("got %q", got)
	}
	if sens.dropped["null-key"] != 1 || sens.dropped["null-value"] != 1 {
		t.Fatalf("dropped %v", sens.dropped)
	}
}

func TestGlobalLeftJoinNullCases(t *testing.T) {
	d, sens := globalJoinFixture(t, true)
	pipeGlobal(t, d, 0, 0, []byte("p1"), []byte("T1"))
	_ = d.Pipe("orders", []byte("k1"), []byte("a,"), 1, nil)       // KAFKA-19208: emitted with nil mapped key
	_ = d.Pipe("orders", []byte("k2"), nil, 2, nil)                // nil value: dropped, counted
	_ = d.Pipe("orders", []byte("k3"), []byte("b,absent"), 3, nil) // nil table value
	_ = d.Pipe("orders", []byte("k4"), []byte("c,p1"), 4, nil)
	got := strings.Join(outputs(d), " ")
	want := "k1=<nil>|k1|a,|<nil> k3=absent|k3|b,absent|<nil> k4=p1|k4|c,p1|T1"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if sens.dropped["null-value"] != 1 || sens.dropped["null-key"] != 0 {
		t.Fatalf("dropped %v", sens.dropped)
	}
}

func TestGlobalTableTombstonesNullKeysAndOffsets(t *testing.T) {
	d, sens := globalJoinFixture(t, true)
	pipeGlobal(t, d, 1, 7, []byte("p1"), []byte("T1"))
	pipeGlobal(t, d, 1, 9, []byte("p1"), nil) // tombstone deletes
	pipeGlobal(t, d, 0, 3, nil, []byte("x"))  // null key dropped, offset still advances
	_ = d.Pipe("orders", []byte("k"), []byte("a,p1"), 1, nil)
	if got := strings.Join(outputs(d), " "); got != "k=p1|k|a,p1|<nil>" {
		t.Fatalf("got %q", got)
	}
	if sens.dropped["null-key"] != 1 {
		t.Fatalf("dropped %v", sens.dropped)
	}
	for p, want := range map[int32]int64{0: 4, 1: 10, 2: 0} {
		if got, err := d.topo.GlobalNextOffset("products", p); err != nil || got != want {
			t.Fatalf("partition %d: next offset %d (%v), want %d", p, got, err, want)
		}
	}
	if st := d.topo.Time().Partitions; len(st) != 1 {
		t.Fatalf("global records must not move stream time: %v", st)
	}
}

func TestUpdateGlobalStoresReadsFromNextOffsets(t *testing.T) {
	d, _ := globalJoinFixture(t, false)
	log := []SourceRecord{
		{Topic: "products", Offset: 0, Key: []byte("p1"), Value: []byte("A")},
		{Topic: "products", Offset: 1, Key: []byte("p1"), Value: []byte("B")},
	}
	var asked []int64
	fetch := func(topic string, next func(int32) (int64, error), apply func(SourceRecord) error) error {
		from, err := next(0)
		if err != nil {
			return err
		}
		asked = append(asked, from)
		for _, r := range log[from:] {
			if err := apply(r); err != nil {
				return err
			}
		}
		return nil
	}
	if err := d.topo.UpdateGlobalStores(fetch); err != nil {
		t.Fatal(err)
	}
	log = append(log, SourceRecord{Topic: "products", Offset: 2, Key: []byte("p1"), Value: []byte("C")})
	if err := d.topo.ScheduleGlobalUpdates(100, fetch); err != nil {
		t.Fatal(err)
	}
	if err := d.AdvanceWallClock(100); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(asked) != "[0 2]" {
		t.Fatalf("read from %v, want [0 2]", asked)
	}
	_ = d.Pipe("orders", []byte("k"), []byte("x,p1"), 1, nil)
	if got := strings.Join(outputs(d), " "); got != "k=p1|k|x,p1|C" {
		t.Fatalf("got %q", got)
	}
}

func TestGlobalTableErrors(t *testing.T) {
	b := newTestBuilder()
	_, _ = b.Stream([]string{"a"}, Consumed{})
	if _, err := b.GlobalTable("a", Consumed{}, Materialized{}); err == nil {
		t.Fatal("a stream's topic cannot also be a global table's")
	}
	if _, err := b.GlobalTable("g", Consumed{}, Materialized{StoreName: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GlobalTable("g", Consumed{}, Materialized{}); err == nil {
		t.Fatal("two global tables on one topic")
	}
	if _, err := b.GlobalTable("h", Consumed{}, Materialized{StoreName: "s"}); err == nil {
		t.Fatal("store name used twice")
	}
	if !b.IsGlobalStore("s") || fmt.Sprint(b.GlobalStores()) != "[{g s}]" {
		t.Fatalf("global stores %v", b.GlobalStores())
	}
}

// The text is Kafka Streams 4.4's describe() of the same topology, which names an inner
// GlobalKTable join KSTREAM-LEFTJOIN- too.
func TestDescribeGlobalStoreInterleavedByID(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"orders"}, Consumed{})
	g, _ := b.GlobalTable("products", Consumed{}, Materialized{})
	j, _ := s.JoinGlobal(g, func(rec Record) (any, error) { return rec.Key, nil }, func(r Record, _, tv any) (any, error) { return tv, nil }, "")
	_ = j.To("out", Produced{})
	want := `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [orders])
      --> KSTREAM-LEFTJOIN-0000000004
    Processor: KSTREAM-LEFTJOIN-0000000004 (stores: [])
      --> KSTREAM-SINK-0000000005
      <-- KSTREAM-SOURCE-0000000000
    Sink: KSTREAM-SINK-0000000005 (topic: out)
      <-- KSTREAM-LEFTJOIN-0000000004

  Sub-topology: 1 for global store (will not generate tasks)
    Source: KSTREAM-SOURCE-0000000002 (topics: [products])
      --> KTABLE-SOURCE-0000000003
    Processor: KTABLE-SOURCE-0000000003 (stores: [products-STATE-STORE-0000000001])
      --> none
      <-- KSTREAM-SOURCE-0000000002
`
	if got := b.Describe().String(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// The printed description leaves the global store out of the join, as Kafka Streams'
	// does; the JSON one and the drawings show that the join reads it.
	join := b.Describe().Subtopologies[0].Nodes[1]
	if join.Name != "KSTREAM-LEFTJOIN-0000000004" || fmt.Sprint(join.Stores, join.ReadsGlobal) != "[] [products-STATE-STORE-0000000001]" {
		t.Fatalf("join %+v", join)
	}
	if dot := b.Describe().DOT(); !strings.Contains(dot, `"KSTREAM-LEFTJOIN-0000000004" -> "store:products-STATE-STORE-0000000001" [arrowhead=none, style=dotted];`) {
		t.Fatalf("the drawing has no edge from the join to the global store:\n%s", dot)
	}

	// Declared first, the global store takes id 0 and is printed before sub-topology 1.
	b = newTestBuilder()
	g, _ = b.GlobalTable("products", Consumed{}, Materialized{StoreName: "products-store"})
	s, _ = b.Stream([]string{"orders"}, Consumed{})
	j, _ = s.LeftJoinGlobal(g, func(rec Record) (any, error) { return rec.Key, nil }, func(r Record, _, tv any) (any, error) { return tv, nil }, "")
	_ = j.To("out", Produced{})
	want = `Topologies:
   Sub-topology: 0 for global store (will not generate tasks)
    Source: KSTREAM-SOURCE-0000000000 (topics: [products])
      --> KTABLE-SOURCE-0000000001
    Processor: KTABLE-SOURCE-0000000001 (stores: [products-store])
      --> none
      <-- KSTREAM-SOURCE-0000000000
  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000002 (topics: [orders])
      --> KSTREAM-LEFTJOIN-0000000003
    Processor: KSTREAM-LEFTJOIN-0000000003 (stores: [])
      --> KSTREAM-SINK-0000000004
      <-- KSTREAM-SOURCE-0000000002
    Sink: KSTREAM-SINK-0000000004 (topic: out)
      <-- KSTREAM-LEFTJOIN-0000000003

`
	if got := b.Describe().String(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

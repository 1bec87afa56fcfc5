package pipeline

import (
	"fmt"
	"strings"
	"testing"
)

func testTables(t *testing.T, b *StreamsBuilder, topics ...string) []*KTable {
	t.Helper()
	var out []*KTable
	for _, topic := range topics {
		table, err := b.Table(topic, Consumed{}, Materialized{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, table)
	}
	return out
}

// tableJoinDriver joins source tables l and r with join, writes the result's stream to out
// and returns a driver with partitions partitions for l and r.
func tableJoinDriver(t *testing.T, partitions int32, join func(l, r *KTable) (*KTable, error)) *Driver {
	t.Helper()
	b := newTestBuilder()
	tables := testTables(t, b, "l", "r")
	j, err := join(tables[0], tables[1])
	if err != nil {
		t.Fatal(err)
	}
	s, err := j.ToStream("")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.To("out", Produced{}); err != nil {
		t.Fatal(err)
	}
	d, err := NewDriver(b, DriverOptions{Partitions: map[string]int32{"l": partitions, "r": partitions, "out": 1}, Stores: NewMemoryStores(), ApplicationID: "app"})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// joinedPairs shows which value came first: the joiner always gets this table's value as
// rec.Value, also when the other table's update triggers it.
func joinedPairs(rec Record, other any) (any, error) {
	return fmt.Sprintf("%v|%v|%v", rec.Key, rec.Value, other), nil
}

// Each side looks its partner up in the other store's partition of the record: rows of
// the same key on different partitions do not meet.
func TestTableJoinLooksUpTheRecordsPartition(t *testing.T) {
	d := tableJoinDriver(t, 2, func(l, r *KTable) (*KTable, error) {
		return l.JoinTable(r, joinedPairs, LeftTableJoin, "", Materialized{})
	})
	pipe := func(topic string, partition int32, k, v string, ts int64) {
		t.Helper()
		var vb []byte
		if v != "" {
			vb = []byte(v)
		}
		if err := d.topo.Process(&SourceRecord{Topic: topic, Partition: partition, Timestamp: ts, Key: []byte(k), Value: vb}); err != nil {
			t.Fatal(err)
		}
	}
	pipe("l", 1, "a", "A", 1)
	pipe("r", 0, "a", "X", 2) // partition 0 holds no left row: the right side emits nothing
	pipe("r", 1, "a", "Y", 3)
	pipe("l", 1, "a", "", 4)
	var got []string
	for {
		r, ok := d.ReadOutput("out")
		if !ok {
			break
		}
		got = append(got, fmt.Sprintf("%s=%s@%d", r.Key, r.Value, r.Timestamp))
	}
	want := []string{"a=a|A|<nil>@1", "a=a|A|Y@3", "a=@4"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestTableJoinRefusesTablesItCannotRead(t *testing.T) {
	b := newTestBuilder()
	tables := testTables(t, b, "l", "r")
	s, err := b.Stream([]string{"w"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.GroupByKey(Grouped{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := g.WindowedBy(TimeWindows{Size: 10, Advance: 10})
	if err != nil {
		t.Fatal(err)
	}
	windowed, err := w.Reduce(func(rec Record, agg any) (any, error) { return agg, nil }, Materialized{StoreName: "w-store"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := windowed.JoinTable(tables[0], joinedPairs, LeftTableJoin, "", Materialized{}); err == nil ||
		!strings.Contains(err.Error(), `leftJoin: this side: not supported yet: reading table rows from store "w-store", a timestampedWindow store`) {
		t.Fatalf("windowed table: %v", err)
	}
	other := testTables(t, newTestBuilder(), "x")[0]
	if _, err := tables[0].JoinTable(other, joinedPairs, InnerTableJoin, "", Materialized{}); err == nil ||
		!strings.Contains(err.Error(), "join: the other table must come from the same builder") {
		t.Fatalf("other builder: %v", err)
	}
	if _, err := tables[0].JoinTable(tables[1], joinedPairs, InnerTableJoin, "", Materialized{Given: true, StoreName: "l-store"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tables[0].JoinTable(tables[1], joinedPairs, InnerTableJoin, "", Materialized{Given: true, StoreName: "l-store"}); err == nil ||
		!strings.Contains(err.Error(), `store "l-store" is already declared`) {
		t.Fatalf("duplicate store: %v", err)
	}
}

// A table without a store is read through its value getter, as Kafka Streams'
// KTableValueGetter: a filter's or mapValues' rows are its parent's passed through it, an
// unmaterialized join's are the join of its inputs' rows (KTableImplTest#testStateStore:
// only the source tables have stores).
func TestTableJoinReadsRowsOfTablesWithoutStore(t *testing.T) {
	b := newTestBuilder()
	tables := testTables(t, b, "l", "r", "x")
	upper, err := tables[1].MapValues(func(rec Record) (any, error) { return strings.ToUpper(rec.Value.(string)), nil }, "")
	if err != nil {
		t.Fatal(err)
	}
	kept, err := upper.Filter(func(rec Record) (bool, error) { return rec.Value != "DROP", nil }, false, "")
	if err != nil {
		t.Fatal(err)
	}
	lr, err := tables[0].JoinTable(kept, joinedPairs, LeftTableJoin, "", Materialized{})
	if err != nil {
		t.Fatal(err)
	}
	concat := func(rec Record, other any) (any, error) { return fmt.Sprintf("%v+%v", rec.Value, other), nil }
	chained, err := tables[2].JoinTable(lr, concat, InnerTableJoin, "", Materialized{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := chained.ToStream("")
	if err != nil {
		t.Fatal(err)
	}
	if err := out.To("out", Produced{}); err != nil {
		t.Fatal(err)
	}
	if got := len(b.Stores()); got != 3 {
		t.Fatalf("stores %v, want only the three source tables'", b.Stores())
	}
	d, err := NewDriver(b, DriverOptions{Stores: NewMemoryStores(), ApplicationID: "app"})
	if err != nil {
		t.Fatal(err)
	}
	pipe := func(topic, k, v string, ts int64) {
		t.Helper()
		if err := d.Pipe(topic, []byte(k), []byte(v), ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	pipe("l", "a", "A", 1)
	pipe("r", "a", "y", 2)
	pipe("x", "a", "X", 3) // reads lr's row through the getter: l's row joined with r's, mapped
	pipe("r", "a", "drop", 4)
	pipe("x", "a", "X2", 5)
	want := []string{"a=X+a|A|Y", "a=X+a|A|<nil>", "a=X2+a|A|<nil>"}
	if got := outputs(d); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %v, want %v", got, want)
	}
	text := b.Describe().String()
	if !strings.Contains(text, "Processor: KTABLE-JOINTHIS-0000000015 (stores: [r-STATE-STORE-0000000003, l-STATE-STORE-0000000000])") {
		t.Fatalf("the join reading lr's rows lists the stores they come from:\n%s", text)
	}
}

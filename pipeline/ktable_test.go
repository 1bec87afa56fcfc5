package pipeline

import (
	"strings"
	"testing"
)

// filteredTableDriver runs table("in", m) filtered to values of other than three letters,
// mapped to upper case, to a stream on topic out.
func filteredTableDriver(t *testing.T, m Materialized) *Driver {
	t.Helper()
	b := newTestBuilder()
	table, err := b.Table("in", Consumed{}, m)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := table.Filter(func(rec Record) (bool, error) { return len(rec.Value.(string)) != 3, nil }, false, "")
	if err != nil {
		t.Fatal(err)
	}
	upper, err := kept.MapValues(func(rec Record) (any, error) { return strings.ToUpper(rec.Value.(string)), nil }, "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := upper.ToStream("")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.To("out", Produced{}); err != nil {
		t.Fatal(err)
	}
	d, err := NewDriver(b, DriverOptions{Stores: NewMemoryStores(), ApplicationID: "app"})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A filter over a materialized source table takes its old values without being asked
// (Kafka Streams' KTableFilter calls enableSendingOldValues(false) on its parent), so an
// update that was not kept and is not kept now goes no further: the tombstone of a key the
// table never held, a second value the filter drops. Over a table without a store there are
// no old values and every such update goes on as a tombstone, as in Kafka Streams.
func TestTableFilterDropsUpdatesNeitherKeptBeforeNorNow(t *testing.T) {
	for _, c := range []struct {
		name string
		m    Materialized
		want string
	}{
		{"materialized", Materialized{Given: true, StoreName: "src"}, "b=LAZY b= a=JUMPS a="},
		{"not materialized", Materialized{}, "k= k= c= b=LAZY b= a=JUMPS a= a="},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := filteredTableDriver(t, c.m)
			for i, kv := range [][2]string{
				{"k", ""},      // a tombstone for a key never held
				{"k", ""},      // and again
				{"c", "fox"},   // dropped by the filter, never kept
				{"b", "lazy"},  // kept
				{"b", "dog"},   // was kept, is not: a tombstone
				{"a", "jumps"}, // kept
				{"a", ""},      // deleted
				{"a", ""},      // deleted again
			} {
				var v []byte
				if kv[1] != "" {
					v = []byte(kv[1])
				}
				if err := d.Pipe("in", []byte(kv[0]), v, int64(i), nil); err != nil {
					t.Fatal(err)
				}
			}
			if got := strings.Join(outputs(d), " "); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

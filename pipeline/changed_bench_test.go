package pipeline

import (
	"strconv"
	"testing"
)

// BenchmarkTableGroupByRepartition measures a KTable groupBy + count through its
// repartition topic (RepartitionTopics, as a streams group's agents run it): each table
// update is written in ChangedSerializer's layout, read back and counted. A row keeps its
// group for half of its updates (one record, both values) and moves for the other half (two
// records, the old value's then the new one's). Like opBench, each driver takes opBatch
// records and is then replaced with the timer stopped: the test driver keeps every record
// written.
func BenchmarkTableGroupByRepartition(b *testing.B) {
	keys := make([][]byte, 16)
	for i := range keys {
		keys[i] = []byte("row-" + strconv.Itoa(i))
	}
	groups := [][]byte{[]byte("group-a"), []byte("group-b"), []byte("group-c")}
	newDriver := func() *Driver {
		sb := newTestBuilder()
		table, err := sb.Table("in", Consumed{}, Materialized{CachingDisabled: true})
		if err != nil {
			b.Fatal(err)
		}
		g, err := table.GroupBy(func(rec Record) (any, any, error) { return rec.Value, rec.Key, nil }, Grouped{})
		if err != nil {
			b.Fatal(err)
		}
		counts, err := g.Count(Materialized{CachingDisabled: true}, int64Serde{}, "")
		countTo(b, counts, err, false)
		d, err := NewDriver(sb, DriverOptions{Partitions: map[string]int32{"in": 4}, Stores: NewMemoryStores(),
			ApplicationID: "app", RepartitionTopics: true})
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	var d *Driver
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		n := i % opBatch
		if n == 0 {
			b.StopTimer()
			d = newDriver()
			b.StartTimer()
		}
		// A row's next update comes 16 records later: in the same group while n/32 holds.
		if err := d.Pipe("in", keys[n%len(keys)], groups[(n/32)%len(groups)], int64(1000+n), nil); err != nil {
			b.Fatal(err)
		}
		d.outputs["out"] = d.outputs["out"][:0]
	}
	if len(d.written) == 0 {
		b.Fatal("nothing went through the repartition topic")
	}
}

package pipeline

import (
	"reflect"
	"testing"
)

// timeWindowsOnClose builds in → groupByKey → TimeWindows{size 10, grace 2} → count with
// emit on close → a terminal keeping "key@start=count", on two partitions of in; its store
// is returned too.
func timeWindowsOnClose(t *testing.T) (*Topology, *[]string, string) {
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
	w, err := g.WindowedBy(TimeWindows{Size: 10, Advance: 10, Grace: 2})
	if err != nil {
		t.Fatal(err)
	}
	w.EmitOnWindowClose(true)
	counts, err := w.Count(Materialized{StoreName: "counts"}, longTestSerde{}, "")
	if err != nil {
		t.Fatal(err)
	}
	out, err := counts.ToStream("")
	if err != nil {
		t.Fatal(err)
	}
	var final []string
	err = out.Foreach(func(r Record) error {
		wk := r.Key.(Windowed)
		final = append(final, wk.Key.(string)+"@"+itoa(int(wk.Start))+"="+itoa(int(r.Value.(int64))))
		return nil
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := b.Build(TopologyOptions{Collector: &Driver{}, Stores: NewMemoryStores(), SourcePartitions: map[string]int32{"in": 2}})
	if err != nil {
		t.Fatal(err)
	}
	topo.SetAssignment([]TopicPartition{{"in", 0}, {"in", 1}})
	return topo, &final, "counts"
}

func sendTo(t *testing.T, topo *Topology, partition int32, key string, ts int64) {
	t.Helper()
	if err := topo.Process(&SourceRecord{Topic: "in", Partition: partition, Key: []byte(key), Value: []byte("v"), Timestamp: ts}); err != nil {
		t.Fatal(err)
	}
}

// windowStarts lists the starts of the windows a partition's store shows.
func windowStarts(t *testing.T, topo *Topology, store string, partition int32) []int64 {
	t.Helper()
	s, err := topo.WindowStore(store, partition)
	if err != nil {
		t.Fatal(err)
	}
	it := s.All(false)
	defer it.Close()
	var starts []int64
	for it.Next() {
		starts = append(starts, it.Window().Start)
	}
	return starts
}

// An emitted window is deleted from the store (its deletion, in the changelog, keeps a
// restored store from emitting it again), where Kafka Streams keeps it until the retention
// (size + grace) drops it.
func TestTimeWindowsEmitOnCloseDeleteEmittedWindows(t *testing.T) {
	topo, final, store := timeWindowsOnClose(t)
	idle := []TopicPartition{{"in", 0}, {"in", 1}}
	for _, tp := range idle {
		topo.SetIdle(tp, true)
	}
	sendTo(t, topo, 0, "k", 15)
	sendTo(t, topo, 0, "k", 27) // [10,20) closes: 20 + 2 ≤ 27
	if want := []string{"k@10=1"}; !reflect.DeepEqual(*final, want) {
		t.Fatalf("final %v, want %v", *final, want)
	}
	if got, want := windowStarts(t, topo, store, 0), []int64{20}; !reflect.DeepEqual(got, want) {
		t.Fatalf("store holds %v, want %v", got, want)
	}
}

// A window the watermark has not closed stays stored past the retention, however far its
// partition's stream time runs ahead, and is emitted once the watermark closes it.
func TestTimeWindowsEmitOnCloseHoldWindowsPastTheRetentionForTheWatermark(t *testing.T) {
	topo, final, store := timeWindowsOnClose(t)
	sendTo(t, topo, 1, "z", 0) // partition 1 holds the watermark at 0
	sendTo(t, topo, 0, "k", 15)
	sendTo(t, topo, 0, "k", 100) // partition 0's store expires [10,20)
	if len(*final) != 0 {
		t.Fatalf("final %v before the watermark moved", *final)
	}
	if got, want := windowStarts(t, topo, store, 0), []int64{100}; !reflect.DeepEqual(got, want) {
		t.Fatalf("store shows %v, want %v", got, want)
	}
	if err := topo.FlushCaches(); err != nil { // a commit barrier
		t.Fatal(err)
	}
	topo.SetIdle(TopicPartition{"in", 1}, true)
	if err := topo.AdvanceWatermark(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"k@10=1", "z@0=1"}; !reflect.DeepEqual(*final, want) {
		t.Fatalf("final %v, want %v", *final, want)
	}
}

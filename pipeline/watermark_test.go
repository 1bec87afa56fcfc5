package pipeline

import (
	"maps"
	"testing"
)

// Two partitions: the slow one holds the watermark back, and idleness releases it; the
// watermark never moves backwards.
func TestWatermarkSlowPartitionAndIdleness(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	g, _ := s.GroupByKey(Grouped{})
	w, _ := g.WindowedBy(TimeWindows{Size: 10, Advance: 10})
	w.EmitOnWindowClose(true)
	counts, _ := w.Count(Materialized{}, longTestSerde{}, "")
	ts, _ := counts.ToStream("")
	var final []string
	_ = ts.Foreach(func(r Record) error {
		wk := r.Key.(Windowed)
		final = append(final, wk.Key.(string)+"@"+itoa(int(wk.Start)))
		return nil
	}, "")
	topo, err := b.Build(TopologyOptions{Collector: &Driver{}, Stores: NewMemoryStores(), SourcePartitions: map[string]int32{"in": 2}})
	if err != nil {
		t.Fatal(err)
	}
	p0, p1 := TopicPartition{"in", 0}, TopicPartition{"in", 1}
	topo.SetAssignment([]TopicPartition{p0, p1})
	send := func(p int32, key string, ts int64) {
		t.Helper()
		if err := topo.Process(&SourceRecord{Topic: "in", Partition: p, Key: []byte(key), Value: []byte("v"), Timestamp: ts}); err != nil {
			t.Fatal(err)
		}
	}
	send(0, "a", 5)
	send(0, "a", 25)
	if topo.Watermark() != -1 || len(final) != 0 {
		t.Fatalf("watermark %d, final %v: p1 has no time and is not idle, nothing may close", topo.Watermark(), final)
	}
	send(1, "b", 3)
	if topo.Watermark() != 3 || len(final) != 0 {
		t.Fatalf("watermark %d, final %v: the slow partition holds it at 3", topo.Watermark(), final)
	}
	topo.SetIdle(p1, true)
	if err := topo.AdvanceWatermark(); err != nil {
		t.Fatal(err)
	}
	if topo.Watermark() != 25 || len(final) != 2 || final[0] != "b@0" && final[0] != "a@0" {
		t.Fatalf("watermark %d, final %v: idleness releases it to 25 and closes [0,10) of both keys", topo.Watermark(), final)
	}
	topo.SetIdle(p1, false)
	send(1, "b", 12)
	if topo.Watermark() != 25 {
		t.Fatalf("watermark %d: it never moves backwards", topo.Watermark())
	}
}

type longTestSerde struct{}

func (longTestSerde) Name() string { return "long" }
func (longTestSerde) Serialize(_ string, _ Headers, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	return []byte(itoa(int(v.(int64)))), nil
}
func (longTestSerde) Deserialize(_ string, _ Headers, b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	n := int64(0)
	for _, c := range b {
		n = n*10 + int64(c-'0')
	}
	return n, nil
}

// Time reports each partition's stream time, which partitions hold the watermark back and
// which are idle; without any window waiting, AdvanceWatermark still moves the watermark
// that Time reports.
func TestTimeViewNamesWhatHoldsTheWatermarkBack(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	_ = s.To("out", Produced{})
	topo, err := b.Build(TopologyOptions{Collector: &Driver{outputs: map[string][]OutputRecord{}}, SourcePartitions: map[string]int32{"in": 3}})
	if err != nil {
		t.Fatal(err)
	}
	p0, p1, p2 := TopicPartition{"in", 0}, TopicPartition{"in", 1}, TopicPartition{"in", 2}
	topo.SetAssignment([]TopicPartition{p2, p0, p1})
	send := func(p int32, ts int64) {
		t.Helper()
		if err := topo.Process(&SourceRecord{Topic: "in", Partition: p, Key: []byte("k"), Value: []byte("v"), Timestamp: ts}); err != nil {
			t.Fatal(err)
		}
	}
	send(0, 50)
	send(1, 20)
	view := func() TimeView {
		t.Helper()
		if err := topo.AdvanceWatermark(); err != nil {
			t.Fatal(err)
		}
		return topo.Time()
	}
	got := view()
	want := TimeView{Watermark: -1, Partitions: []PartitionTime{
		{TopicPartition: p0, StreamTime: 50},
		{TopicPartition: p1, StreamTime: 20},
		{TopicPartition: p2, StreamTime: -1, HoldsBack: true},
	}}
	if !equalTimeViews(got, want) {
		t.Fatalf("p2 has no record yet and is not idle: got %+v, want %+v", got, want)
	}
	topo.SetIdle(p2, true)
	got = view()
	want.Watermark = 20
	want.Partitions[1].HoldsBack, want.Partitions[2].HoldsBack, want.Partitions[2].Idle = true, false, true
	if !equalTimeViews(got, want) {
		t.Fatalf("p2 idle, p1 the slowest: got %+v, want %+v", got, want)
	}
	topo.SetIdle(p0, true)
	topo.SetIdle(p1, true)
	got = view()
	if got.Watermark != 50 {
		t.Fatalf("every partition idle: the watermark is the largest stream time, got %d", got.Watermark)
	}
	for _, p := range got.Partitions {
		if p.HoldsBack {
			t.Fatalf("an idle partition holds nothing back: %+v", got)
		}
	}
}

func equalTimeViews(a, b TimeView) bool {
	if a.Watermark != b.Watermark || len(a.Partitions) != len(b.Partitions) {
		return false
	}
	for i := range a.Partitions {
		if a.Partitions[i] != b.Partitions[i] {
			return false
		}
	}
	return true
}

// Records of two topics and two partitions interleaved: each source partition keeps its own
// stream time and the task partition the largest of its topics', whatever partition the
// record before came from (the topology keeps the previous record's slots).
func TestStreamTimesOfInterleavedPartitions(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in", "other"}, Consumed{})
	_ = s.To("out", Produced{})
	topo, err := b.Build(TopologyOptions{Collector: &Driver{outputs: map[string][]OutputRecord{}}, SourcePartitions: map[string]int32{"in": 2, "other": 2}})
	if err != nil {
		t.Fatal(err)
	}
	send := func(topic string, p int32, ts int64) {
		t.Helper()
		if err := topo.Process(&SourceRecord{Topic: topic, Partition: p, Key: []byte("k"), Value: []byte("v"), Timestamp: ts}); err != nil {
			t.Fatal(err)
		}
	}
	send("in", 0, 10)
	send("in", 0, 5)
	send("in", 1, 7)
	send("other", 0, 30)
	send("in", 0, 12)
	send("other", 1, 3)
	send("in", 1, 8)
	want := map[TopicPartition]int64{{"in", 0}: 12, {"in", 1}: 8, {"other", 0}: 30, {"other", 1}: 3}
	got := map[TopicPartition]int64{}
	for _, p := range topo.Time().Partitions {
		got[p.TopicPartition] = p.StreamTime
	}
	if !maps.Equal(got, want) {
		t.Errorf("stream times %v, want %v", got, want)
	}
	if got := topo.TaskTime(TaskID{Partition: 0}); got != 30 {
		t.Errorf("task 0_0: stream time %d, want 30", got)
	}
	if got := topo.TaskTime(TaskID{Partition: 1}); got != 8 {
		t.Errorf("task 0_1: stream time %d, want 8", got)
	}
	if got := topo.TaskTime(TaskID{Partition: 2}); got != -1 {
		t.Errorf("task 0_2 saw no record: stream time %d, want -1", got)
	}
}

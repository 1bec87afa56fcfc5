package pipeline

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// repartitionedLog is in → flatMap (two records per input, keyed by their values) → peek
// logging "0:<key>" → repartition → peek logging "1:<key>@<partition>" on 2 partitions.
func repartitionedLog(t *testing.T) (*StreamsBuilder, *[]string) {
	t.Helper()
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	var log []string
	fm, _ := s.FlatMap(func(r Record) ([]KeyValue, error) {
		var out []KeyValue
		for _, w := range strings.Fields(r.Value.(string)) {
			out = append(out, KeyValue{Key: w, Value: w})
		}
		return out, nil
	}, "")
	p0, _ := fm.Peek(func(r Record) error { log = append(log, "0:"+r.Key.(string)); return nil }, "")
	rp, err := p0.Repartition(Repartitioned{NumPartitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := rp.Foreach(func(r Record) error {
		log = append(log, fmt.Sprintf("1:%s@%d", r.Key, r.Partition))
		return nil
	}, ""); err != nil {
		t.Fatal(err)
	}
	return b, &log
}

// The tasks of a topology are its sub-topologies times their partitions, named as Kafka
// Streams names them.
func TestTaskIDsAreSubtopologiesTimesPartitions(t *testing.T) {
	b, _ := repartitionedLog(t)
	topo, err := b.Build(TopologyOptions{Collector: &Driver{}, SourcePartitions: map[string]int32{"in": 3}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, id := range topo.TaskIDs() {
		got = append(got, id.String())
	}
	if want := []string{"0_0", "0_1", "0_2", "1_0", "1_1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("tasks %v, want %v", got, want)
	}
	id, err := ParseTaskID("1_12")
	if err != nil || id != (TaskID{Subtopology: 1, Partition: 12}) {
		t.Fatalf("ParseTaskID(1_12) = %v, %v", id, err)
	}
	for _, bad := range []string{"1", "a_1", "1_b", "-1_0", "0_-2", "1_2_3"} {
		if _, err := ParseTaskID(bad); err == nil {
			t.Errorf("ParseTaskID(%q) took it", bad)
		}
	}
}

// A record re-keyed for another task waits until the record that produced it is done in
// its own task, as a repartition topic's records do (and as TopologyTestDriver processes
// them): the input's second output passes the first sub-topology before the first output
// reaches the second.
func TestRekeyedRecordsRunAfterTheInputRecord(t *testing.T) {
	b, log := repartitionedLog(t)
	d, err := NewDriver(b, DriverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Pipe("in", nil, []byte("a b"), 1, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"0:a", "0:b", "1:a@" + fmt.Sprint(DefaultPartition([]byte("a"), 2)), "1:b@" + fmt.Sprint(DefaultPartition([]byte("b"), 2))}
	if !reflect.DeepEqual(*log, want) {
		t.Fatalf("processing order %v, want %v", *log, want)
	}
}

// Each task keeps its own stream time: a task of the repartitioned sub-topology has the
// largest timestamp of the records routed to it, not its partition's in the source topic.
func TestEachTaskKeepsItsStreamTime(t *testing.T) {
	b, _ := repartitionedLog(t)
	d, err := NewDriver(b, DriverOptions{Partitions: map[string]int32{"in": 2}})
	if err != nil {
		t.Fatal(err)
	}
	a := DefaultPartition([]byte("a"), 2)
	if err := d.PipeTo("in", 1-a, nil, []byte("a"), 50, nil); err != nil {
		t.Fatal(err)
	}
	topo := d.Topology()
	for id, want := range map[TaskID]int64{
		{0, 1 - a}: 50, {0, a}: -1,
		{1, a}: 50, {1, 1 - a}: -1,
	} {
		if got := topo.TaskTime(id); got != want {
			t.Errorf("task %s: stream time %d, want %d", id, got, want)
		}
	}
}

// countSerde reads and writes counts as decimal text.
type countSerde struct{}

func (countSerde) Name() string { return "count" }
func (countSerde) Serialize(_ string, _ Headers, v any) ([]byte, error) {
	return []byte(fmt.Sprint(v)), nil
}
func (countSerde) Deserialize(_ string, _ Headers, b []byte) (any, error) {
	var n int64
	_, err := fmt.Sscan(string(b), &n)
	return n, err
}

// routerTo hands what it takes straight to another topology, as the agent's exchange does
// between workers.
type routerTo struct {
	to      *Topology
	taken   []Rekeyed
	flushes int
}

func (r *routerTo) Route(rk Rekeyed) error { r.taken = append(r.taken, rk); return nil }
func (r *routerTo) Flush() {
	r.flushes++
	for i := range r.taken {
		if err := r.to.ProcessRekeyed(&r.taken[i]); err != nil {
			panic(err)
		}
	}
	r.taken = r.taken[:0]
}

// Two topologies share an application's tasks: one runs the source tasks, the other the
// counting ones; the re-keyed records reach the count through the router, and the first
// topology runs no counting task.
func TestTopologiesShareTasksThroughARouter(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	g, _ := s.GroupBy(func(r Record) (any, error) { return r.Value, nil }, Grouped{})
	if _, err := g.Count(Materialized{StoreName: "counts"}, countSerde{}, ""); err != nil {
		t.Fatal(err)
	}
	stores := NewMemoryStores()
	gt := NewGlobalTime()
	parts := map[string]int32{"in": 2}
	counter, err := b.Build(TopologyOptions{Collector: &Driver{}, Stores: stores, SourcePartitions: parts, ExplicitTasks: true, Time: gt})
	if err != nil {
		t.Fatal(err)
	}
	router := &routerTo{to: counter}
	reader, err := b.Build(TopologyOptions{Collector: &Driver{}, Stores: stores, SourcePartitions: parts, ExplicitTasks: true, Time: gt, Router: router})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range reader.TaskIDs() {
		target := counter
		if id.Subtopology == 0 {
			target = reader
		}
		if err := target.AddTask(id); err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range []string{"x", "y", "x", "x"} {
		if err := reader.Process(&SourceRecord{Topic: "in", Partition: int32(i % 2), Offset: int64(i), Timestamp: int64(10 + i), Value: []byte(w)}); err != nil {
			t.Fatal(err)
		}
	}
	if router.flushes == 0 {
		t.Fatal("the router was never flushed")
	}
	x := DefaultPartition([]byte("x"), 2)
	store, err := counter.Store("counts", x)
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _, err := store.Get("x"); err != nil || v != int64(3) {
		t.Fatalf("count of x = %v, %v; want 3", v, err)
	}
	if _, err := reader.Store("counts", x); err == nil || !strings.Contains(err.Error(), "does not run on this topology") {
		t.Fatalf("the source topology reached the counting task's store: %v", err)
	}
	if got, want := reader.Tasks(), []TaskID{{0, 0}, {0, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("source topology runs %v, want %v", got, want)
	}
	if err := reader.Process(&SourceRecord{Topic: "in", Partition: 5, Value: []byte("x")}); err == nil || !strings.Contains(err.Error(), "task 0_5 does not run") {
		t.Fatalf("a record of a task the topology does not run: %v", err)
	}
}

// A closed task is made afresh by the next AddTask: its processors start again from the
// stores, which keep what it wrote.
func TestClosedTaskStartsAgainFromItsStores(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	g, _ := s.GroupByKey(Grouped{})
	if _, err := g.Count(Materialized{StoreName: "counts"}, countSerde{}, ""); err != nil {
		t.Fatal(err)
	}
	topo, err := b.Build(TopologyOptions{Collector: &Driver{}, Stores: NewMemoryStores(), SourcePartitions: map[string]int32{"in": 1}, ExplicitTasks: true})
	if err != nil {
		t.Fatal(err)
	}
	id := TaskID{}
	if err := topo.AddTask(id); err != nil {
		t.Fatal(err)
	}
	send := func() {
		t.Helper()
		if err := topo.Process(&SourceRecord{Topic: "in", Key: []byte("k"), Value: []byte("v"), Timestamp: 5}); err != nil {
			t.Fatal(err)
		}
	}
	send()
	before := topo.tasks[id]
	topo.CloseTask(id)
	if err := topo.Process(&SourceRecord{Topic: "in", Key: []byte("k"), Value: []byte("v")}); err == nil {
		t.Fatal("a closed task still processes")
	}
	if err := topo.AddTask(id); err != nil {
		t.Fatal(err)
	}
	if topo.tasks[id] == before || topo.TaskTime(id) != -1 {
		t.Fatalf("the task was not made afresh (stream time %d)", topo.TaskTime(id))
	}
	send()
	store, _ := topo.Store("counts", 0)
	if v, _, _, err := store.Get("k"); err != nil || v != int64(2) {
		t.Fatalf("count %v, %v after the task came back; want 2", v, err)
	}
	if err := topo.AddTask(TaskID{Subtopology: 0, Partition: 1}); err == nil {
		t.Fatal("AddTask took a task beyond the source's partitions")
	}
}

// A hold keeps the watermark one millisecond below it, whatever the partitions say, and it
// never goes back.
func TestHoldsKeepTheWatermarkBelowThem(t *testing.T) {
	g := NewGlobalTime()
	tp := TopicPartition{Topic: "in"}
	g.SetAssignment([]TopicPartition{tp})
	g.slot(tp).time.Store(100)
	h := g.NewHold()
	h.Set(40)
	if wm := g.advance(); wm != 39 {
		t.Fatalf("watermark %d under a hold at 40, want 39", wm)
	}
	h.Set(math.MaxInt64)
	if wm := g.advance(); wm != 100 {
		t.Fatalf("watermark %d with the hold gone, want 100", wm)
	}
	h.Set(10)
	if wm := g.advance(); wm != 100 {
		t.Fatalf("watermark went back to %d", wm)
	}
}

// heldRouter keeps what it takes until the test hands it over, so that two topologies
// routing to each other never run inside each other's processing.
type heldRouter struct{ taken []Rekeyed }

func (r *heldRouter) Route(rk Rekeyed) error { r.taken = append(r.taken, rk); return nil }
func (r *heldRouter) Flush()                 {}

// A foreign-key join's tasks may run on different topologies: its subscriptions go to the
// other table's partition of the foreign key and its answers back to the row's partition as
// records of its internal topics, each task reading and writing only its own store
// partitions, so a row and its foreign key on different topologies still join.
func TestForeignKeyJoinAcrossTopologies(t *testing.T) {
	b := newTestBuilder()
	left, _ := b.Table("left", Consumed{}, Materialized{StoreName: "l"})
	right, _ := b.Table("right", Consumed{}, Materialized{StoreName: "r"})
	_, err := left.JoinForeignKey(right, func(r Record) (any, error) { return r.Value, nil },
		func(r Record, other any) (any, error) { return fmt.Sprint(r.Value, "+", other), nil }, false, TableJoined{}, Materialized{StoreName: "joined", Given: true})
	if err != nil {
		t.Fatal(err)
	}
	stores, gt := NewMemoryStores(), NewGlobalTime()
	parts := map[string]int32{"left": 2, "right": 2}
	routers := [2]*heldRouter{{}, {}}
	var topos [2]*Topology
	for i := range topos {
		if topos[i], err = b.Build(TopologyOptions{Collector: &Driver{}, Stores: stores, SourcePartitions: parts, ExplicitTasks: true, Time: gt, Router: routers[i]}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range topos[0].TaskIDs() {
		if err := topos[id.Partition].AddTask(id); err != nil {
			t.Fatal(err)
		}
	}
	deliver := func() {
		t.Helper()
		for routers[0].taken != nil || routers[1].taken != nil {
			for i, r := range routers {
				taken := r.taken
				r.taken = nil
				for j := range taken {
					if err := topos[1-i].ProcessRekeyed(&taken[j]); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	part := func(key string) int32 { return DefaultPartition([]byte(key), 2) }
	send := func(topic, key, value string, ts int64) {
		t.Helper()
		p := part(key)
		if err := topos[p].Process(&SourceRecord{Topic: topic, Partition: p, Key: []byte(key), Value: []byte(value), Timestamp: ts}); err != nil {
			t.Fatal(err)
		}
		deliver()
	}
	// A row and its foreign key on different partitions, both ways.
	var rows [2]string
	var fks [2]string
	for i := 0; rows[0] == "" || rows[1] == "" || fks[0] == "" || fks[1] == ""; i++ {
		rows[part(fmt.Sprint("k", i))] = fmt.Sprint("k", i)
		fks[part(fmt.Sprint("f", i))] = fmt.Sprint("f", i)
	}
	send("right", fks[1], "a", 1)
	send("left", rows[0], fks[1], 2)
	send("left", rows[1], fks[0], 3)
	send("right", fks[0], "b", 4)
	for i, want := range []string{fks[1] + "+a", fks[0] + "+b"} {
		store, err := topos[i].Store("joined", int32(i))
		if err != nil {
			t.Fatal(err)
		}
		if v, _, _, err := store.Get(rows[i]); err != nil || v != want {
			t.Errorf("row %s joined %v, %v; want %s", rows[i], v, err, want)
		}
	}
}

// SourceTasks finds the task that reads a partition from the graph alone: named sources,
// topics a pattern matches, and nothing for repartition topics and unknown ones.
func TestSourceTasksFromTheGraph(t *testing.T) {
	b, _ := repartitionedLog(t)
	if _, err := b.StreamPattern("logs-.*", Consumed{}); err != nil {
		t.Fatal(err)
	}
	st := b.SourceTasks()
	for tp, want := range map[TopicPartition]TaskID{
		{"in", 2}:     {0, 2},
		{"logs-a", 1}: {2, 1},
	} {
		if got, ok := st.Of(tp); !ok || got != want {
			t.Errorf("%v: task %v (%t), want %v", tp, got, ok, want)
		}
	}
	for _, topic := range []string{"other", "KSTREAM-REPARTITION-0000000003-repartition"} {
		if id, ok := st.Of(TopicPartition{Topic: topic}); ok {
			t.Errorf("%s: task %v", topic, id)
		}
	}
}

// closingProcessor counts its closes.
type closingProcessor struct {
	funcProcessor
	closed *[]string
}

func (p *closingProcessor) Close() error {
	*p.closed = append(*p.closed, p.ctx.TaskID())
	if p.ctx.TaskID() == "0_1" {
		return errors.New("close failed")
	}
	return nil
}

// A closing task closes its Processor API processors (made when it started, before its
// first record), as Kafka Streams closes a task's processors; a close that fails is
// reported, the task closed anyway.
func TestClosingATaskClosesItsProcessors(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	var closed []string
	if _, err := s.Process(func() (UserProcessor, error) {
		return &closingProcessor{funcProcessor: funcProcessor{process: func(*ProcessorContext, Record) error { return nil }}, closed: &closed}, nil
	}, nil, ""); err != nil {
		t.Fatal(err)
	}
	topo, err := b.Build(TopologyOptions{Collector: &Driver{}, SourcePartitions: map[string]int32{"in": 3}, ExplicitTasks: true})
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		if err := topo.AddTask(TaskID{Partition: p}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []int32{0, 1} {
		if err := topo.Process(&SourceRecord{Topic: "in", Partition: p, Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := topo.CloseTask(TaskID{Partition: 0}); err != nil || !reflect.DeepEqual(closed, []string{"0_0"}) {
		t.Fatalf("closing 0_0: %v; closed %v", err, closed)
	}
	if err := topo.Close(); err == nil || !strings.Contains(err.Error(), "close failed") {
		t.Fatalf("Close = %v, want 0_1's error", err)
	}
	// 0_2 saw no record, but it started with the others.
	if !reflect.DeepEqual(closed, []string{"0_0", "0_1", "0_2"}) || len(topo.Tasks()) != 0 {
		t.Fatalf("closed %v, tasks left %v", closed, topo.Tasks())
	}
}

package pipeline

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Task time (TopologyOptions.TaskTime) against the global watermark, with two tasks of which
// one runs far ahead in time: partition 0 (key "a") and partition 1 (key "b") of "in".

// finalsKinds are the operators that emit final results: each builds in → groupByKey → its
// windowed count (or suppression) emitting on close → a terminal keeping "key@start=count".
var finalsKinds = map[string]func(t *testing.T, g *KGroupedStream) *KTable{
	"time windows": func(t *testing.T, g *KGroupedStream) *KTable {
		w, err := g.WindowedBy(TimeWindows{Size: 10, Advance: 10, Grace: 2})
		must(t, err)
		w.EmitOnWindowClose(true)
		counts, err := w.Count(Materialized{StoreName: "counts"}, longTestSerde{}, "")
		must(t, err)
		return counts
	},
	"session windows": func(t *testing.T, g *KGroupedStream) *KTable {
		w, err := g.WindowedBySession(SessionWindows{Gap: 5, Grace: 2})
		must(t, err)
		w.EmitOnWindowClose(true)
		counts, err := w.Count(Materialized{StoreName: "counts"}, longTestSerde{}, "")
		must(t, err)
		return counts
	},
	"sliding windows": func(t *testing.T, g *KGroupedStream) *KTable {
		w, err := g.WindowedBySliding(SlidingWindows{TimeDifference: 5, Grace: 2})
		must(t, err)
		w.EmitOnWindowClose(true)
		counts, err := w.Count(Materialized{StoreName: "counts"}, longTestSerde{}, "")
		must(t, err)
		return counts
	},
	// The suppression that takes its final results from the aggregation's store
	// (suppress_final.go).
	"suppress, unbounded": func(t *testing.T, g *KGroupedStream) *KTable {
		return suppressedCounts(t, g, BufferConfig{})
	},
	// A bounded buffer: suppress's own (suppress.go).
	"suppress, bounded": func(t *testing.T, g *KGroupedStream) *KTable {
		return suppressedCounts(t, g, BufferConfig{MaxRecords: 1000})
	},
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func suppressedCounts(t *testing.T, g *KGroupedStream, buf BufferConfig) *KTable {
	w, err := g.WindowedBy(TimeWindows{Size: 10, Advance: 10, Grace: 2})
	must(t, err)
	counts, err := w.Count(Materialized{StoreName: "counts"}, longTestSerde{}, "")
	must(t, err)
	final, err := counts.Suppress(Suppressed{UntilWindowCloses: true, Buffer: buf})
	must(t, err)
	return final
}

// finalsDriver runs a kind over two partitions of "in" in the test driver, where every
// partition is idle: the watermark is the largest partition stream time.
func finalsDriver(t *testing.T, kind func(*testing.T, *KGroupedStream) *KTable, taskTime bool) (*Driver, *countingSensors, *[]string) {
	t.Helper()
	b := newTestBuilder()
	s, err := b.Stream([]string{"in"}, Consumed{})
	must(t, err)
	g, err := s.GroupByKey(Grouped{})
	must(t, err)
	out, err := kind(t, g).ToStream("")
	must(t, err)
	var final []string
	must(t, out.Foreach(func(r Record) error {
		wk := r.Key.(Windowed)
		final = append(final, fmt.Sprintf("%s@%d=%d", wk.Key, wk.Start, r.Value.(int64)))
		return nil
	}, ""))
	sensors := newCountingSensors()
	d, err := NewDriver(b, DriverOptions{Partitions: map[string]int32{"in": 2}, Stores: NewMemoryStores(), Sensors: sensors, TaskTime: taskTime})
	must(t, err)
	return d, sensors, &final
}

type partitionInput struct {
	partition int32
	key       string
	ts        int64
}

// slowAndFast: partition 1's task is slow; partition 0's runs far ahead after its first record.
var slowAndFast = []partitionInput{{1, "b", 1}, {0, "a", 1000}, {1, "b", 3}, {1, "b", 500}}

// runFinals pipes inputs and returns each one's final results, and the window-closed drops.
func runFinals(t *testing.T, kind func(*testing.T, *KGroupedStream) *KTable, taskTime bool, inputs []partitionInput) ([][]string, int) {
	t.Helper()
	d, sensors, final := finalsDriver(t, kind, taskTime)
	defer d.Close()
	var steps [][]string
	for _, in := range inputs {
		*final = nil
		must(t, d.PipeTo("in", in.partition, []byte(in.key), []byte("v"), in.ts, nil))
		steps = append(steps, *final)
	}
	return steps, sensors.dropped["window-closed"]
}

// only keeps the results of one key.
func only(steps [][]string, key string) [][]string {
	out := make([][]string, len(steps))
	for i, rs := range steps {
		for _, r := range rs {
			if strings.HasPrefix(r, key+"@") {
				out[i] = append(out[i], r)
			}
		}
	}
	return out
}

// In task time a task's final results are its own records' alone: the slow task's windows
// stay open while the other task runs ahead, its late-arriving record counts, and its windows
// close when its own time passes them. On the global watermark the fast task closes the slow
// task's windows: their final results come out early, and the slow task's next record is
// dropped as window-closed.
func TestTaskTimeClosesEachTasksWindowsOnItsOwnTime(t *testing.T) {
	var slowOnly []partitionInput
	for _, in := range slowAndFast {
		if in.key == "b" {
			slowOnly = append(slowOnly, in)
		}
	}
	for name, kind := range finalsKinds {
		t.Run(name, func(t *testing.T) {
			alone, _ := runFinals(t, kind, true, slowOnly)
			got, closed := runFinals(t, kind, true, slowAndFast)
			got = only(got, "b")
			want := [][]string{alone[0], nil, alone[1], alone[2]}
			if !reflect.DeepEqual(got, want) || closed != 0 {
				t.Fatalf("task time: the slow task's final results %q (%d window-closed), want %q: those of its records alone", got, closed, want)
			}
			if len(slices.Concat(want...)) == 0 {
				t.Fatal("the slow task's records alone closed no window")
			}
			global, closed := runFinals(t, kind, false, slowAndFast)
			if global = only(global, "b"); len(global[1]) == 0 || closed == 0 {
				t.Fatalf("global watermark: the slow task's final results %q (%d window-closed), want some when the fast task moved the watermark, and its record then dropped", global, closed)
			}
		})
	}
}

// The time windows' results of TestTaskTimeClosesEachTasksWindowsOnItsOwnTime, step by step.
func TestTaskTimeTimeWindowsStepByStep(t *testing.T) {
	kind := finalsKinds["time windows"]
	task, closed := runFinals(t, kind, true, slowAndFast)
	if want := [][]string{nil, nil, nil, {"b@0=2"}}; !reflect.DeepEqual(task, want) || closed != 0 {
		t.Fatalf("task time %q (%d window-closed), want %q", task, closed, want)
	}
	// Both of the slow task's records after the watermark reached 1000 are for windows it
	// closed: [0,10) emitted with 1, [500,510) closed empty.
	global, closed := runFinals(t, kind, false, slowAndFast)
	if want := [][]string{nil, {"b@0=1"}, nil, nil}; !reflect.DeepEqual(global, want) || closed != 2 {
		t.Fatalf("global watermark %q (%d window-closed), want %q and 2", global, closed, want)
	}
}

// A task's stream-stream join emits a record's non-joined result on its own time; on the
// global watermark it waits for the other partition, which has delivered and is not idle.
func TestTaskTimeStreamJoinDoesNotWaitForOtherTasks(t *testing.T) {
	for _, taskTime := range []bool{false, true} {
		b := newTestBuilder()
		l, err := b.Stream([]string{"left"}, Consumed{})
		must(t, err)
		r, err := b.Stream([]string{"right"}, Consumed{})
		must(t, err)
		joiner := func(_ Record, lv, rv any) (any, error) { return fmt.Sprintf("%v+%v", lv, rv), nil }
		j, err := l.JoinStream(r, LeftStreamJoin, joiner, JoinWindows{Before: 10, After: 10}, StreamJoined{})
		must(t, err)
		var out []string
		must(t, j.Foreach(func(r Record) error {
			out = append(out, fmt.Sprintf("%s:%s@%d", r.Key, r.Value, r.Timestamp))
			return nil
		}, ""))
		parts := map[string]int32{"left": 2, "right": 2}
		topo, err := b.Build(TopologyOptions{Collector: &Driver{}, Stores: NewMemoryStores(), SourcePartitions: parts, TaskTime: taskTime})
		must(t, err)
		topo.SetAssignment([]TopicPartition{{"left", 0}, {"left", 1}, {"right", 0}, {"right", 1}})
		for _, tp := range []TopicPartition{{"right", 0}, {"right", 1}} {
			topo.SetIdle(tp, true)
		}
		for _, in := range []struct {
			partition int32
			key       string
			ts        int64
		}{{1, "slow", 0}, {0, "k", 0}, {0, "z", 1000}} {
			must(t, topo.Process(&SourceRecord{Topic: "left", Partition: in.partition, Key: []byte(in.key), Value: []byte("v"), Timestamp: in.ts}))
		}
		want := []string{"k:v+<nil>@0"}
		if !taskTime {
			want = nil // left-1 holds the watermark at 0
		}
		if !reflect.DeepEqual(out, want) {
			t.Errorf("task time %v: output %q, want %q", taskTime, out, want)
		}
	}
}

// Through a repartition topic, as the agents of a streams group run it, the reading task's
// stream time is that of the records it reads there, whatever its source partition's time:
// a record re-keyed from a partition far ahead is not late for a task behind, and the task's
// window closes when a record it reads passes it.
func TestTaskTimeOfARepartitionedTaskIsItsRecords(t *testing.T) {
	b := newTestBuilder()
	s, err := b.Stream([]string{"in"}, Consumed{})
	must(t, err)
	byValue, err := s.SelectKey(func(r Record) (any, error) { return r.Value, nil }, "")
	must(t, err)
	g, err := byValue.GroupByKey(Grouped{Name: "byvalue"})
	must(t, err)
	counts := finalsKinds["time windows"](t, g)
	out, err := counts.ToStream("")
	must(t, err)
	var final []string
	must(t, out.Foreach(func(r Record) error {
		wk := r.Key.(Windowed)
		final = append(final, fmt.Sprintf("%s@%d=%d", wk.Key, wk.Start, r.Value.(int64)))
		return nil
	}, ""))
	sensors := newCountingSensors()
	d, err := NewDriver(b, DriverOptions{Partitions: map[string]int32{"in": 2}, Stores: NewMemoryStores(), Sensors: sensors,
		ApplicationID: "app", RepartitionTopics: true, TaskTime: true})
	must(t, err)
	defer d.Close()
	x, y := "x", "y"
	for DefaultPartition([]byte(y), 2) == DefaultPartition([]byte(x), 2) {
		y += "y"
	}
	for i, in := range []struct {
		partition int32
		value     string
		ts        int64
		want      []string
	}{
		{0, x, 1, nil},
		{1, y, 1000, nil},
		{1, x, 5, nil}, // from partition 1, at 1000 already: not late for x's task
		{1, x, 20, []string{x + "@0=2"}},
	} {
		final = nil
		must(t, d.PipeTo("in", in.partition, []byte("k"), []byte(in.value), in.ts, nil))
		if !reflect.DeepEqual(final, in.want) {
			t.Fatalf("record %d (%s@%d from partition %d): final results %q, want %q", i, in.value, in.ts, in.partition, final, in.want)
		}
	}
	if n := sensors.dropped["late"] + sensors.dropped["window-closed"]; n != 0 {
		t.Fatalf("%d records dropped: %v", n, sensors.dropped)
	}
}

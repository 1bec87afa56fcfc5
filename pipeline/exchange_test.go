package pipeline

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// laneWorker runs a topology on a goroutine of its own, as the agent's workers do: it
// processes its source records, and after each one processes its inbox while its lane
// pushes back.
type laneWorker struct {
	topo *Topology
	lane *Lane
	// maxInbox is the most records Take ever handed out at once; pushedBack counts the
	// times the lane pushed back.
	maxInbox, pushedBack int
}

func (w *laneWorker) takeInbox(t *testing.T) {
	recs := w.lane.Take()
	w.maxInbox = max(w.maxInbox, len(recs))
	for i := range recs {
		if err := w.topo.ProcessRekeyed(&recs[i]); err != nil {
			t.Error(err)
		}
	}
	w.lane.Done(recs)
}

func (w *laneWorker) run(t *testing.T, in []SourceRecord, stop <-chan struct{}) {
	for i := range in {
		if err := w.topo.Process(&in[i]); err != nil {
			t.Error(err)
			return
		}
		for blocked := w.lane.Blocked(); blocked != nil; blocked = w.lane.Blocked() {
			w.pushedBack++
			select {
			case <-blocked:
			case <-w.lane.Wake():
				w.takeInbox(t)
			case <-stop:
				t.Error("stopped while pushed back")
				return
			}
		}
	}
}

// serve processes the inbox until stop.
func (w *laneWorker) serve(t *testing.T, stop <-chan struct{}) {
	for {
		select {
		case <-w.lane.Wake():
			w.takeInbox(t)
		case <-stop:
			return
		}
	}
}

// Two topologies each run half of the tasks, so re-keyed records cross both ways through
// inboxes of four records: both fill, both push back, and neither waits for the other
// forever (run with -race). Every word is counted once, each task's records arrive in the
// order they were sent, and no inbox ever held more than its bound and one flush.
func TestExchangeFullBothWaysNeitherLosesNorDeadlocks(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	fm, _ := s.FlatMapValues(func(r Record) ([]any, error) {
		var out []any
		for i := range 3 {
			out = append(out, fmt.Sprintf("%s/%d", r.Value, i))
		}
		return out, nil
	}, "")
	g, _ := fm.GroupBy(func(r Record) (any, error) { return r.Value.(string)[:2], nil }, Grouped{})
	if _, err := g.Count(Materialized{StoreName: "counts"}, countSerde{}, ""); err != nil {
		t.Fatal(err)
	}
	// The same records through a repartition of their own: each target task sees each
	// source partition's records (its offsets: the record context stays the consumed
	// record's) in order.
	var mu sync.Mutex
	lastOffset := map[[2]int64]int64{}
	var disorder []string
	keyed, _ := fm.SelectKey(func(r Record) (any, error) { return r.Value.(string)[:2], nil }, "")
	rp, _ := keyed.Repartition(Repartitioned{Name: "order"})
	_ = rp.Foreach(func(r Record) error {
		mu.Lock()
		defer mu.Unlock()
		k := [2]int64{int64(r.Partition), r.Offset % 4}
		if prev, ok := lastOffset[k]; ok && r.Offset < prev {
			disorder = append(disorder, fmt.Sprintf("task 2_%d got offset %d after %d", r.Partition, r.Offset, prev))
		}
		lastOffset[k] = r.Offset
		return nil
	}, "")
	gt := NewGlobalTime()
	parts := map[string]int32{"in": 4}
	ex := NewExchange(2, 4, gt)
	owners := map[TaskID]int{}
	var workers []*laneWorker
	for i := range 2 {
		// Each its own stores, as each worker writes its own tasks' partitions.
		topo, err := b.Build(TopologyOptions{Collector: &Driver{}, Stores: NewMemoryStores(), SourcePartitions: parts,
			ExplicitTasks: true, Time: gt, Router: ex.Lane(i)})
		if err != nil {
			t.Fatal(err)
		}
		workers = append(workers, &laneWorker{topo: topo, lane: ex.Lane(i)})
	}
	for _, id := range workers[0].topo.TaskIDs() {
		owners[id] = int(id.Partition) % 2
		if err := workers[owners[id]].topo.AddTask(id); err != nil {
			t.Fatal(err)
		}
	}
	ex.SetOwners(owners)
	const n = 400
	inputs := make([][]SourceRecord, 2)
	want := map[string]int64{}
	for i := range n {
		p := int32(i % 4)
		w := fmt.Sprintf("%c%c", 'a'+byte(i%5), 'a'+byte(i%7))
		inputs[p%2] = append(inputs[p%2], SourceRecord{Topic: "in", Partition: p, Offset: int64(i), Timestamp: int64(i), Value: []byte(w)})
		want[w] += 3
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	finished := make(chan struct{}, 2)
	for i, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(t, inputs[i], stop)
			finished <- struct{}{}
			w.serve(t, stop)
		}()
	}
	deadline := time.After(time.Minute)
	for range 2 {
		select {
		case <-finished:
		case <-deadline:
			close(stop)
			wg.Wait()
			t.Fatal("the workers did not get through their input: a deadlock")
		}
	}
	quiet := make(chan struct{})
	go func() {
		select {
		case <-time.After(time.Minute):
			close(quiet)
		case <-stop:
		}
	}()
	if !ex.WaitQuiet(quiet) {
		t.Fatal("the exchange never emptied")
	}
	close(stop)
	wg.Wait()
	for w, c := range want {
		id := TaskID{Subtopology: 1, Partition: DefaultPartition([]byte(w), 4)}
		store, err := workers[owners[id]].topo.Store("counts", id.Partition)
		if err != nil {
			t.Fatal(err)
		}
		if v, _, _, err := store.Get(w); err != nil || v != c {
			t.Errorf("count of %s = %v (%v), want %d", w, v, err, c)
		}
	}
	if len(disorder) > 0 {
		t.Errorf("records out of order: %v", disorder)
	}
	for i, w := range workers {
		if w.maxInbox == 0 || w.pushedBack == 0 {
			t.Errorf("worker %d received at most %d records at once and was pushed back %d times", i, w.maxInbox, w.pushedBack)
		}
		// The bound, and what one flush (one input record's six re-keyed records) adds.
		if w.maxInbox > 4+6 {
			t.Errorf("worker %d's inbox held %d records, bound 4", i, w.maxInbox)
		}
	}
}

// A record holds the watermark below its timestamp from the moment it is routed (in the
// outbox, in the inbox, while it is processed) until it is done.
func TestExchangedRecordsHoldTheWatermark(t *testing.T) {
	gt := NewGlobalTime()
	tp := TopicPartition{Topic: "in"}
	gt.SetAssignment([]TopicPartition{tp})
	gt.slot(tp).time.Store(100)
	ex := NewExchange(2, 10, gt)
	ex.SetOwners(map[TaskID]int{{Subtopology: 1}: 1})
	from, to := ex.Lane(0), ex.Lane(1)
	check := func(step string, want int64) {
		t.Helper()
		if wm := gt.advance(); wm != want {
			t.Fatalf("%s: watermark %d, want %d", step, wm, want)
		}
	}
	if err := from.Route(Rekeyed{Task: TaskID{Subtopology: 1}, Record: Record{Timestamp: 50}}); err != nil {
		t.Fatal(err)
	}
	check("routed", 49)
	from.Flush()
	check("in the inbox", 49)
	recs := to.Take()
	if len(recs) != 1 {
		t.Fatalf("took %d records", len(recs))
	}
	check("being processed", 49)
	to.Done(recs)
	check("done", 100)
	if !ex.Quiet() {
		t.Fatal("the exchange is not quiet with every record done")
	}
	if err := from.Route(Rekeyed{Task: TaskID{Subtopology: 2}}); err == nil {
		t.Fatal("a record for a task no lane runs was routed")
	}
}

// tumblingCount builds a tumbling 10 ms windowed count of "in" by key, cached, emitting on
// window close or not.
func tumblingCount(t *testing.T, onClose bool) *StreamsBuilder {
	t.Helper()
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	g, _ := s.GroupByKey(Grouped{})
	w, err := g.WindowedBy(TimeWindows{Size: 10, Advance: 10})
	if err != nil {
		t.Fatal(err)
	}
	w.EmitOnWindowClose(onClose)
	if _, err := w.Count(Materialized{StoreName: "counts"}, countSerde{}, ""); err != nil {
		t.Fatal(err)
	}
	return b
}

// An update waiting in a record cache holds the watermark below its window's end while a
// processor of some topology waits for the watermark, until its own topology flushes it
// (AdvanceWatermark, even with no processor of its own waiting); while none waits, caches
// hold nothing.
func TestCachedUpdatesHoldTheWatermarkOnlyForWhoWaits(t *testing.T) {
	for _, someoneWaits := range []bool{false, true} {
		gt := NewGlobalTime()
		gt.SetAssignment([]TopicPartition{{Topic: "in"}})
		cached, err := tumblingCount(t, false).Build(TopologyOptions{Collector: &Driver{}, Stores: NewMemoryStores(),
			SourcePartitions: map[string]int32{"in": 2}, ExplicitTasks: true, Time: gt, CacheMaxBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if err := cached.AddTask(TaskID{}); err != nil {
			t.Fatal(err)
		}
		if someoneWaits {
			waiting, err := tumblingCount(t, true).Build(TopologyOptions{Collector: &Driver{}, Stores: NewMemoryStores(),
				SourcePartitions: map[string]int32{"in": 2}, ExplicitTasks: true, Time: gt})
			if err != nil {
				t.Fatal(err)
			}
			if err := waiting.AddTask(TaskID{Partition: 1}); err != nil {
				t.Fatal(err)
			}
		}
		for _, ts := range []int64{5, 25} {
			if err := cached.Process(&SourceRecord{Topic: "in", Key: []byte("k"), Value: []byte("v"), Timestamp: ts}); err != nil {
				t.Fatal(err)
			}
		}
		want := int64(25)
		if someoneWaits {
			// [0, 10) is cached: the watermark stays below 10.
			want = 9
		}
		if wm := gt.advance(); wm != want {
			t.Fatalf("someone waits: %t: the watermark is %d, want %d", someoneWaits, wm, want)
		}
		if err := cached.AdvanceWatermark(); err != nil {
			t.Fatal(err)
		}
		if wm := gt.advance(); wm != 25 {
			t.Fatalf("someone waits: %t: after the cache flushed, the watermark is %d, want 25", someoneWaits, wm)
		}
	}
}

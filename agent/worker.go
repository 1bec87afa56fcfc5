package agent

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/luart"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

// worker is one stream thread (num.stream.threads): a goroutine with its own Lua runtime
// and topology that runs its share of the application's tasks. The loop hands it the
// consumed records of its tasks' partitions and the steps of the commit barrier (cmds, in
// order); the records its tasks re-key for other workers' tasks go through the exchange
// (its lane), and those other workers re-key for its tasks come in through its lane's
// inbox. It writes its tasks' store partitions through a state.Writer of its own and sends
// through a producer lane of its own. docs/architecture.md has the picture.
//
// Every field is the worker goroutine's, but for those the loop reads at a barrier, when
// the worker waits for its next command (through do, whose channel orders the accesses).
type worker struct {
	id int
	l  *loop
	// rt, b and topo are the worker's Lua runtime, the builder its scripts filled in, and
	// the topology built from it; tasks are the tasks it runs.
	rt    *luart.Runtime
	b     *pipeline.StreamsBuilder
	topo  *pipeline.Topology
	tasks []pipeline.TaskID
	// internal are the repartition topics topo reads through Kafka (repartition.go).
	internal map[string]pipeline.InternalTopic
	lane     *pipeline.Lane
	out      *kafkaio.Lane
	// w writes the worker's tasks' store partitions into db, the loop's database when it
	// was built (nil without stores).
	w  *state.Writer
	db *state.DB

	// cmds are what the loop gave the worker to run, in order (queue.go): batches of
	// records, punctuations, the barrier's steps.
	cmds commands
	done chan struct{}
	// failed is set once the worker failed (or the loop halts it): from then on it drops
	// what it is given, until the loop builds it afresh.
	failed   atomic.Bool
	progress loopProgress
	// wallClock and listening say whether the worker's topology has wall-clock
	// punctuators or processors that wait for the watermark, for the loop's punctuation
	// clock.
	wallClock, listening atomic.Bool

	// The epoch's consumed offsets and record count, read and reset at the barrier.
	next    map[pipeline.TopicPartition]int64
	records int

	consumed map[string]prometheus.Counter
	lastLua  map[string]time.Duration
	blocked  prometheus.Counter
}

func newWorker(l *loop, id int, rt *luart.Runtime, b *pipeline.StreamsBuilder) *worker {
	w := &worker{
		id: id, l: l, rt: rt, b: b,
		cmds:     newCommands(),
		done:     make(chan struct{}),
		next:     map[pipeline.TopicPartition]int64{},
		consumed: map[string]prometheus.Counter{},
		blocked:  l.a.metrics.ThreadBlocked.WithLabelValues(strconv.Itoa(id)),
	}
	if l.k.producer != nil {
		w.out = l.k.producer.NewLane()
	}
	l.a.workerProgress.watch(&w.progress)
	go w.run()
	return w
}

func (w *worker) run() {
	defer close(w.done)
	for {
		w.progress.wait()
		var wake <-chan struct{} // nil until the worker's first topology is built
		if w.lane != nil {
			wake = w.lane.Wake()
		}
		select {
		case <-wake:
			w.progress.step(time.Now())
			w.takeInbox()
		case <-w.cmds.ready:
			// One command at a time, so the inbox is taken between batches too.
			fn, more, ok := w.cmds.next()
			if !ok {
				return
			}
			if more {
				w.cmds.signal()
			}
			if fn != nil {
				w.progress.step(time.Now())
				fn()
			}
		}
	}
}

// workerRuntime is a worker's Lua runtime and the builder its scripts filled in.
type workerRuntime struct {
	rt *luart.Runtime
	b  *pipeline.StreamsBuilder
}

// stop ends the worker's goroutine once it has run what it was given, closes its tasks and
// its runtime.
func (w *worker) stop() { w.retire().rt.Close() }

// retire is stop but for the runtime, which it returns open with its builder: a reload's
// probation keeps the replaced workers' runtimes to roll back to (rollback.go).
func (w *worker) retire() workerRuntime {
	_ = w.do(func() error {
		w.closeTopology()
		return nil
	})
	w.cmds.close()
	<-w.done
	w.l.a.workerProgress.unwatch(&w.progress)
	if w.w != nil && w.db == w.l.db {
		w.w.Release()
	}
	return workerRuntime{rt: w.rt, b: w.b}
}

// do runs fn on the worker's goroutine, after what the worker was given before, and waits
// for it.
func (w *worker) do(fn func() error) error {
	reply := make(chan error, 1)
	w.cmds.push(func() { reply <- fn() })
	return <-reply
}

// failure is what stopped a worker: retry says the epoch may be dropped and processed
// again (loop.retry, as for a failed record); otherwise the application stops unless the
// state database is at fault (loop.recoverState, as for a failed punctuation).
type failure struct {
	err   error
	retry bool
}

// fail reports the worker's failure to the loop, which halts every worker and handles it;
// the worker drops what it is given meanwhile.
func (w *worker) fail(err error, retry bool) {
	w.failed.Store(true)
	w.l.failed(failure{err: err, retry: retry})
}

// processBatch runs a batch of one source partition's records through the worker's
// tasks. After each record, the re-keyed records it sent another worker's full inbox make
// the worker wait for room, taking its own inbox meanwhile.
func (w *worker) processBatch(batch []pipeline.SourceRecord) {
	if w.failed.Load() || len(batch) == 0 {
		w.l.queued.Add(-int64(len(batch)))
		w.l.batchProcessed()
		return
	}
	m := w.l.a.metrics
	// A batch holds records of one partition (Consumer.Messages), so what is counted per
	// partition is counted once per batch, for the records processed so far.
	tp := pipeline.TopicPartition{Topic: batch[0].Topic, Partition: batch[0].Partition}
	consumed := func(n int) {
		if n == 0 {
			return
		}
		w.consumedCounter(tp.Topic).Add(float64(n))
		w.next[tp] = batch[n-1].Offset + 1
		w.records += n
	}
	process := w.topo.Process
	if it, ok := w.internal[tp.Topic]; ok {
		process = func(msg *pipeline.SourceRecord) error { return w.topo.ProcessInternal(it.Name, msg) }
	}
	// One clock read per record: a record's end is the next one's start.
	start := time.Now()
	for i := range batch {
		w.progress.step(start)
		// The records sent while processing msg name it if the broker refuses them.
		msg := &batch[i]
		if err := w.settleRecord(msg, process(msg)); err != nil {
			consumed(i)
			w.l.queued.Add(-int64(len(batch)))
			w.fail(err, true)
			return
		}
		end := time.Now()
		m.ProcessLatency.Observe(end.Sub(start).Seconds())
		start = end
		if w.waitRoom() {
			if w.failed.Load() {
				// A record of the inbox it took meanwhile failed.
				w.l.queued.Add(-int64(len(batch)))
				return
			}
			start = time.Now()
		}
	}
	consumed(len(batch))
	w.l.queued.Add(-int64(len(batch)))
	if err := w.sendChangelog(); err != nil {
		w.fail(err, true)
		return
	}
	w.notePunctuation()
	w.l.batchProcessed()
}

// notePunctuation tells the loop whether the worker's topology needs the punctuation clock:
// processors schedule punctuators when their task's first record comes.
func (w *worker) notePunctuation() {
	w.wallClock.Store(w.topo.HasWallClockPunctuators())
	w.listening.Store(w.topo.HasWatermarkListeners())
}

// reportTaskTimes exports the stream time of each task the worker runs.
func (w *worker) reportTaskTimes() {
	for _, id := range w.tasks {
		if st := w.topo.TaskTime(id); st >= 0 {
			w.l.a.metrics.TaskStreamTime.WithLabelValues(id.String()).Set(float64(st))
		}
	}
}

// settleRecord applies the exception handlers to what Process or ProcessRekeyed returned
// for a record whose origin is msg: a record the handler continued on is skipped, and the
// records re-keyed before it still run (Drain). A store that found its database corrupt
// failed the record, whatever error reached here (a script may wrap it): the database is
// rebuilt, the record not skipped. The error returned stops the worker.
func (w *worker) settleRecord(msg *pipeline.SourceRecord, err error) error {
	for err != nil {
		if w.l.stateCorrupt(err) || msg == nil {
			return err
		}
		if herr := w.l.handleRecordError(w.out, w.b, msg, err); herr != nil {
			return herr
		}
		err = w.topo.Drain()
	}
	return nil
}

// waitRoom waits while the lane pushes back, taking the worker's own inbox meanwhile; it
// reports whether it waited.
func (w *worker) waitRoom() bool {
	blocked := w.lane.Blocked()
	if blocked == nil {
		return false
	}
	start := time.Now()
	for ; blocked != nil; blocked = w.lane.Blocked() {
		select {
		case <-blocked:
		case <-w.lane.Wake():
			w.takeInbox()
		}
	}
	w.blocked.Add(time.Since(start).Seconds())
	return true
}

// takeInbox runs the records other workers re-keyed for this worker's tasks.
func (w *worker) takeInbox() {
	recs := w.lane.Take()
	if len(recs) == 0 {
		return
	}
	defer w.lane.Done(recs)
	if w.failed.Load() {
		return
	}
	for i := range recs {
		r := &recs[i]
		if err := w.settleRecord(r.Origin, w.topo.ProcessRekeyed(r)); err != nil {
			w.fail(err, r.Origin != nil)
			return
		}
	}
	if err := w.sendChangelog(); err != nil {
		w.fail(err, true)
	}
}

// punctuate runs the wall-clock punctuators that are due and applies the global watermark
// to the worker's processors.
func (w *worker) punctuate() {
	if w.failed.Load() {
		return
	}
	err := w.topo.PunctuateWallClock()
	if err == nil {
		err = w.topo.AdvanceWatermark()
	}
	if err != nil {
		w.fail(err, false)
		return
	}
	if err := w.sendChangelog(); err != nil {
		w.fail(err, true)
	}
}

// sendChangelog sends the changelog records the worker's tasks wrote since the last call,
// each partition's in write order, while the epoch goes on, so the barrier waits for less.
// Under exactly-once they are in the epoch's transaction and abort with it; under
// at-least-once a dropped epoch may leave some in the changelog, as a crash does, and
// processing its records again writes them again. While the previous epoch's changelog
// acknowledgements are awaited in the background (at-least-once) it sends nothing: their
// offsets, committed with that epoch's store writes, are taken as the highest
// acknowledged, and must not cover this epoch's records.
func (w *worker) sendChangelog() error {
	if w.w == nil {
		return nil
	}
	if gate := w.l.changelogGate.Load(); gate != nil {
		select {
		case <-*gate:
		default:
			return nil
		}
	}
	e := w.l.epoch
	for _, r := range w.w.TakeChangelog() {
		topic, ok := e.changelogFor[r.Store]
		if !ok {
			continue
		}
		if err := w.out.Send(topic, r.Partition, r.Key, r.Value, r.Headers, r.Timestamp, nil); err != nil {
			return fmt.Errorf("changelog %s: %w", topic, err)
		}
	}
	return nil
}

func (w *worker) consumedCounter(topic string) prometheus.Counter {
	c, ok := w.consumed[topic]
	if !ok {
		c = w.l.a.metrics.RecordsConsumed.WithLabelValues(topic)
		w.consumed[topic] = c
	}
	return c
}

// takeConsumed hands the loop the epoch's consumed offsets and record count.
func (w *worker) takeConsumed(into map[pipeline.TopicPartition]int64) int {
	maps.Copy(into, w.next)
	clear(w.next)
	n := w.records
	w.records = 0
	return n
}

// build builds the worker's topology afresh on its runtime's builder, on the loop's state
// database, time and exchange, and gives it its tasks: after a dropped epoch, a rebuilt
// database or a reload, the processors' in-memory state starts again from the committed
// state, as Kafka Streams re-initialises a corrupted task.
func (w *worker) build(tasks []pipeline.TaskID) error {
	l := w.l
	if w.db != l.db {
		// A rebuilt database: the old one is gone, and its writer with it.
		w.w, w.db = nil, l.db
		if l.db != nil {
			w.w = l.db.NewWriter()
		}
	}
	opts := l.opts
	// Kafka Streams splits statestore.cache.max.bytes evenly among its stream threads.
	opts.CacheMaxBytes /= int64(len(l.workers))
	opts.Collector = w.out
	opts.Time = l.time
	opts.ExplicitTasks = true
	opts.Router = l.ex.Lane(w.id)
	opts.SkipGlobalStores = w.id != 0
	if w.w != nil {
		opts.Stores = w.w.StoreProvider()
	}
	w.closeTopology()
	topo, err := w.b.Build(opts)
	if err != nil {
		return fmt.Errorf("build the topology: %w", err)
	}
	if w.id == 0 && l.globals != nil {
		if err := l.globals.schedule(topo); err != nil {
			return err
		}
	}
	for _, id := range tasks {
		if err := topo.AddTask(id); err != nil {
			return fmt.Errorf("task %s: %w", id, err)
		}
	}
	w.topo, w.lane, w.tasks = topo, l.ex.Lane(w.id), tasks
	w.internal = internalByTopic(topo, l.a.cfg.ApplicationID, opts.RepartitionTopics)
	clear(w.next)
	w.records = 0
	w.failed.Store(false)
	w.chargeLua()
	w.notePunctuation()
	w.reportTasks()
	return nil
}

// closeTopology closes the tasks of the worker's topology, if it has one, before it is
// replaced or the worker stops: their processors' close runs (errors are logged, as Kafka
// Streams logs them when it closes a task).
func (w *worker) closeTopology() {
	if w.topo == nil {
		return
	}
	if err := w.topo.Close(); err != nil {
		w.l.a.log.Warn("closing the tasks of a worker", "worker", w.id, "err", err)
	}
	w.topo = nil
}

// moveTasks closes the tasks the worker no longer runs and adds those it runs now, after
// a barrier.
func (w *worker) moveTasks(tasks []pipeline.TaskID) error {
	keep := map[pipeline.TaskID]bool{}
	for _, id := range tasks {
		keep[id] = true
	}
	m := w.l.a.metrics
	thread := strconv.Itoa(w.id)
	for _, id := range w.tasks {
		if !keep[id] {
			if err := w.topo.CloseTask(id); err != nil {
				w.l.a.log.Warn("closing a task that moves to another worker", "task", id.String(), "err", err)
			}
			m.ThreadTasksClosed.WithLabelValues(thread).Inc()
		}
	}
	var errs []error
	for _, id := range tasks {
		if !w.runs(id) {
			errs = append(errs, w.topo.AddTask(id))
			m.ThreadTasksCreated.WithLabelValues(thread).Inc()
		}
	}
	w.tasks = tasks
	w.notePunctuation()
	w.reportTasks()
	return errors.Join(errs...)
}

func (w *worker) runs(id pipeline.TaskID) bool {
	for _, x := range w.tasks {
		if x == id {
			return true
		}
	}
	return false
}

func (w *worker) reportTasks() {
	w.l.a.metrics.ThreadTasks.WithLabelValues(strconv.Itoa(w.id)).Set(float64(len(w.tasks)))
}

// chargeLua makes the runtime keep each node's Lua time; the runtime asks the worker's
// topology, whichever it is, which node calls.
func (w *worker) chargeLua() {
	w.rt.ChargeNodes(func() string { return w.topo.CurrentNode() })
	w.lastLua = map[string]time.Duration{}
}

// reportLua adds each node's Lua time since the last report to the Lua time metric. Time
// spent outside any node (loading the scripts) counts under node "".
func (w *worker) reportLua() {
	spent := maps.Clone(w.rt.LuaTimeByNode())
	if spent == nil {
		spent = map[string]time.Duration{}
	}
	outside := w.rt.LuaTime()
	for _, d := range spent {
		outside -= d
	}
	spent[""] += outside
	for node, d := range spent {
		if delta := d - w.lastLua[node]; delta > 0 {
			w.l.a.metrics.LuaTime.WithLabelValues(node).Add(delta.Seconds())
			w.lastLua[node] = d
		}
	}
}

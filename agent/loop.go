package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/console"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/luart"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

// loop is the processing loop: it hands the consumed records to the workers (worker.go)
// that run their tasks, and closes an epoch at each commit barrier (every
// commit.interval.ms, or early when the stores' uncommitted bytes cross
// statestore.uncommitted.max.bytes) once every worker has processed what it was given;
// epoch.go says what the barrier commits. It also serves the group's rebalances, reloads
// and the punctuation clock. docs/architecture.md has the picture.
type loop struct {
	a     *Agent
	k     *kafkaClients
	db    *state.DB // nil without stores; replaceDB tells the epoch a rebuilt one
	b     *pipeline.StreamsBuilder
	epoch *epoch

	// caughtUpSince is when each partition's consumer last reached the log end.
	caughtUpSince map[pipeline.TopicPartition]time.Time
	// opts are what every worker builds its topology with (worker.build adds its own
	// parts); globals keeps the global stores current, on worker 0. After a dropped epoch
	// the processors' in-memory state (operator stream times, buffers, punctuators) starts
	// again from the committed state, as Kafka Streams re-initialises a corrupted task; a
	// reload builds its new topologies the same way. assignment is re-applied.
	opts       pipeline.TopologyOptions
	globals    *globalStores
	assignment []pipeline.TopicPartition

	// workers run the tasks and owners says which one runs each task. time and ex are the
	// watermark and the exchange of re-keyed records the workers share; sources says which
	// task reads each source partition.
	workers []*worker
	owners  map[pipeline.TaskID]int
	time    *pipeline.GlobalTime
	ex      *pipeline.Exchange
	sources *pipeline.SourceTasks
	// internal are the repartition topics the tasks read, when re-keyed records go through
	// them (repartition.go), by their names with the application id.
	internal map[string]pipeline.InternalTopic
	// queued counts the records given to the workers and not processed yet: the loop takes
	// no more from the consumer while it is at queueMax (queue.go).
	queued   atomic.Int64
	queueMax int64
	// failure is a worker's first failure since the loop last handled one; failures
	// receives when one is set.
	failMu   sync.Mutex
	failure  *failure
	failures chan struct{}
	// processed receives when a worker finished a batch.
	processed chan struct{}
	// changelogGate holds the workers' changelog records back while the previous
	// at-least-once epoch's are not acknowledged (worker.sendChangelog).
	changelogGate atomic.Pointer[chan struct{}]

	// active are the tasks the agent's streams group gave it (streamsgroup.go); nil in a
	// classic group, where the agent runs every task.
	active map[pipeline.TaskID]bool

	assigned chan []pipeline.TopicPartition
	revoke   chan chan error
	// writes are the standby and warmup tasks' writes into the state database in a streams
	// group (onLoop), run between the loop's other steps.
	writes chan loopWrite
	done   chan struct{}

	everRunning bool
	// staged is a reloaded topology waiting for a commit barrier.
	staged *reloadCandidate
	// probation is the trial of a reloaded topology, with the one it replaced (rollback.go).
	probation *probation

	// stateDir holds db; a corrupt database is rebuilt there and bootGlobals bootstraps
	// the global stores of the topology built on it (staterebuild.go).
	stateDir    string
	bootGlobals func(context.Context, *pipeline.Topology, *state.DB) error
	roleState   // active or standby (standby.go)
}

// exchangeCapacity is the bound of each worker's inbox of re-keyed records; a test that
// fills the inboxes lowers it.
var exchangeCapacity = pipeline.DefaultExchangeCapacity

// newLoop makes the loop of a run; startWorkers gives it its workers and startTopology
// builds their topologies.
func newLoop(a *Agent, k *kafkaClients, db *state.DB, b *pipeline.StreamsBuilder) *loop {
	l := &loop{
		a: a, k: k, db: db, b: b,
		epoch:     newEpoch(a, k, db, b.Stores()),
		assigned:  make(chan []pipeline.TopicPartition),
		revoke:    make(chan chan error),
		writes:    make(chan loopWrite),
		done:      make(chan struct{}),
		failures:  make(chan struct{}, 1),
		processed: make(chan struct{}, 1),

		caughtUpSince: map[pipeline.TopicPartition]time.Time{},
	}
	l.epoch.sendLetter = func(d *deadLetter) error { return l.sendDeadLetter(l.k.producer, d, nil) }
	l.epoch.restore = l.wipeAndRestore
	l.handleProductionErrors()
	return l
}

// startWorkers starts cfg.NumStreamThreads workers: the first runs rt, whose scripts made
// b; each other loads the scripts into a runtime of its own.
func (l *loop) startWorkers(cfg *config.Config, rt *luart.Runtime, b *pipeline.StreamsBuilder) error {
	more, err := l.a.loadWorkerRuntimes(cfg, b)
	if err != nil {
		rt.Close()
		return err
	}
	l.useWorkers(l.workersOn(append([]workerRuntime{{rt: rt, b: b}}, more...)), cfg)
	l.b = b
	return nil
}

// queueRecords is how many consumed records the workers may hold before the loop takes no
// more from the consumer: four batches of max.poll.records per worker, so that no worker
// waits for the loop while the consumer has records, and a worker whose tasks' partitions
// bring more than its share keeps the others fed until it holds all of that.
func queueRecords(cfg *config.Config, workers int) int64 {
	return int64(4 * workers * int(config.MaxPollRecords.Get(cfg.Client(config.ForConsumer))))
}

// loadWorkerRuntimes loads cfg's scripts into a runtime of its own for each worker after the
// first (num.stream.threads - 1), each checked to make b's topology; on an error none is
// left open.
func (a *Agent) loadWorkerRuntimes(cfg *config.Config, b *pipeline.StreamsBuilder) ([]workerRuntime, error) {
	var more []workerRuntime
	want := b.Describe().String()
	for id := 1; id < cfg.NumStreamThreads; id++ {
		wrt, wb, err := loadTopology(cfg, a.schemas, a.log, a.opts.Stdout, a.onLuaError)
		if err == nil && wb.Describe().String() != want {
			wrt.Close()
			err = errors.New("the scripts changed while they were loaded: the workers would run different topologies")
		}
		if err != nil {
			for _, r := range more {
				r.rt.Close()
			}
			return nil, fmt.Errorf("load the scripts of worker %d: %w", id, err)
		}
		more = append(more, workerRuntime{rt: wrt, b: wb})
	}
	return more, nil
}

// workersOn starts a worker on each runtime, worker i on rts[i].
func (l *loop) workersOn(rts []workerRuntime) []*worker {
	workers := make([]*worker, len(rts))
	for i, r := range rts {
		workers[i] = newWorker(l, i, r.rt, r.b)
	}
	return workers
}

// useWorkers makes workers the loop's, for the config they were loaded from: the tasks are
// spread over them again, those of the workers that stay staying where they are, and the
// metrics of the workers beyond them go. Their topologies are built by rebuildTopology.
func (l *loop) useWorkers(workers []*worker, cfg *config.Config) {
	for id := len(workers); id < len(l.workers); id++ {
		l.a.metrics.ThreadTasks.DeleteLabelValues(strconv.Itoa(id))
	}
	l.workers = workers
	l.queueMax = queueRecords(cfg, len(workers))
	if l.owners != nil {
		l.owners = assignTasks(taskIDsOf(l.owners), len(workers), l.owners)
		l.publishTasks()
	}
}

// stopWorkers ends every worker and closes its runtime.
func (l *loop) stopWorkers() {
	for _, w := range l.workers {
		w.stop()
	}
	l.workers = nil
}

// all runs fn on every worker at once, each on its goroutine after what it was given
// before, and waits for them.
func (l *loop) all(fn func(w *worker) error) error {
	replies := make([]chan error, len(l.workers))
	for i, w := range l.workers {
		reply := make(chan error, 1)
		replies[i] = reply
		w.cmds.push(func() { reply <- fn(w) })
	}
	var errs []error
	for _, reply := range replies {
		errs = append(errs, <-reply)
	}
	return errors.Join(errs...)
}

// failed records a worker's failure and wakes the loop; the first one since the loop
// last handled one is kept (halt drops those that follow it).
func (l *loop) failed(f failure) {
	l.failMu.Lock()
	if l.failure == nil {
		l.failure = &f
	}
	l.failMu.Unlock()
	select {
	case l.failures <- struct{}{}:
	default:
	}
}

func (l *loop) takeFailure() *failure {
	l.failMu.Lock()
	defer l.failMu.Unlock()
	f := l.failure
	l.failure = nil
	return f
}

// batchProcessed tells the loop a worker finished a batch.
func (l *loop) batchProcessed() {
	select {
	case l.processed <- struct{}{}:
	default:
	}
}

// Assigned implements kafkaio.RebalanceHandler; it runs on the consumer's goroutine.
func (l *loop) Assigned(tps []pipeline.TopicPartition) {
	select {
	case l.assigned <- tps:
	case <-l.done:
	}
}

// Revoking implements kafkaio.RebalanceHandler: the loop closes its epoch before the
// partitions are given up.
func (l *loop) Revoking([]pipeline.TopicPartition) {
	reply := make(chan error)
	select {
	case l.revoke <- reply:
		<-reply
	case <-l.done:
	}
}

func (l *loop) run(ctx context.Context) error {
	defer close(l.done)
	defer l.follow.stop()
	defer func() {
		if l.staged != nil {
			l.staged.close()
			l.a.reloadFailed(errors.New("the agent stopped before the next commit barrier"))
		}
		l.endProbation()
	}()
	ticker := time.NewTicker(l.commitTick())
	defer ticker.Stop()
	// Wall-clock punctuators are checked between batches and at least this often.
	punctuate := time.NewTicker(min(l.commitTick(), 100*time.Millisecond))
	defer punctuate.Stop()
	errs := l.k.consumer.Errors()
	var subscriptions chan subscriptionChange // nil (never ready) without source patterns
	if l.b.HasPatternSources() {
		subscriptions = make(chan subscriptionChange)
		watchCtx, stopWatch := context.WithCancel(ctx)
		// The watcher is gone before run returns: the agent then closes the consumer it
		// lists the topics with.
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			l.watchPatterns(watchCtx, subscriptions)
		}()
		defer func() {
			stopWatch()
			<-watched
		}()
	}
	progress := &l.a.progress
	defer progress.wait()
	for {
		progress.wait()
		// While the workers hold as many records as they may, nothing more is taken from
		// the consumer, which then stops fetching: the workers push back.
		msgs := l.k.consumer.Messages()
		if l.queued.Load() >= l.queueMax {
			msgs = nil
		}
		select {
		case <-ctx.Done():
			progress.step(time.Now())
			return l.commit(true)
		case batch := <-msgs:
			progress.step(time.Now())
			if err := l.dispatch(batch); err != nil {
				if err := l.retry(err); err != nil {
					return err
				}
			}
		case <-l.failures:
			progress.step(time.Now())
			if err := l.handleFailure(); err != nil {
				return err
			}
		case <-l.processed:
			progress.step(time.Now())
			l.reportUncommitted()
			if maxBytes := l.a.cfg.UncommittedMaxBytes; l.db != nil && maxBytes >= 0 && l.db.UncommittedBytes() > maxBytes {
				l.a.metrics.EarlyCommits.Inc()
				if err := l.commit(false); err != nil {
					return err
				}
			}
			if err := l.commitAfterBatch(); err != nil {
				return err
			}
		case <-punctuate.C:
			progress.step(time.Now())
			if err := l.punctuate(); err != nil {
				if err := l.retry(err); err != nil {
					return err
				}
			}
			l.publishTime()
		case <-l.epoch.committingDone():
			progress.step(time.Now())
			if err := l.epoch.settle(); err != nil {
				if err := l.retry(err); err != nil {
					return err
				}
			}
		case <-l.a.taps.Changed():
			progress.step(time.Now())
			l.applyTaps()
		case <-ticker.C:
			progress.step(time.Now())
			if err := l.commit(false); err != nil {
				return err
			}
			l.swapStaged()
		case c := <-l.a.reload.staged:
			progress.step(time.Now())
			l.staged = c
		case reply := <-l.revoke:
			progress.step(time.Now())
			err := l.commit(true)
			l.epoch.endGeneration()
			reply <- err
			if err != nil {
				return err
			}
			if cur := l.a.state.Current(); cur == StateRunning || cur == StateStandby {
				_ = l.a.state.Transition(StateRebalancing)
			}
		case w := <-l.writes:
			progress.step(time.Now())
			w.reply <- w.write()
		case tps := <-l.assigned:
			progress.step(time.Now())
			if l.k.member != nil {
				if err := l.takeTasks(ctx, tps); err != nil {
					if ctx.Err() == nil {
						return err
					}
					continue
				}
			} else if standby, err := l.takeRole(ctx, tps); err != nil || standby {
				if err != nil && ctx.Err() == nil {
					return err
				}
				continue
			}
			l.a.log.Info("partitions assigned", "partitions", len(tps))
			l.a.log.Debug("assignment", "partitions", tps)
			l.time.SetAssignment(l.k.sourcesOnly(tps))
			l.assignment = tps
			clear(l.caughtUpSince)
			if err := l.assignTasks(); err != nil {
				return err
			}
			if err := l.takeOverFromKafkaStreams(ctx); err != nil {
				return err
			}
			if l.a.state.Current() != StateRunning {
				_ = l.a.state.Transition(StateRunning)
			}
			if !l.everRunning {
				l.everRunning = true
				l.a.notifySystemd(sdReady)
				l.a.logRunning(l.b, l.k.subscription)
			}
		case err := <-errs:
			progress.step(time.Now())
			l.a.log.Warn("consumer", "err", err)
		case <-l.k.consumer.Replaced():
			return l.takenOver()
		case <-l.k.consumer.Failed():
			return l.k.consumer.FailedErr()
		case c := <-subscriptions:
			progress.step(time.Now())
			if err := l.resubscribe(c); err != nil {
				return err
			}
		}
	}
}

// dispatch hands a batch of one partition's records to the worker that runs the
// partition's task, opening the epoch's transaction first under exactly-once.
func (l *loop) dispatch(batch []pipeline.SourceRecord) error {
	if len(batch) == 0 {
		return nil
	}
	if err := l.epoch.begin(); err != nil {
		return err
	}
	l.epoch.dirty = true
	id := l.taskOf(pipeline.TopicPartition{Topic: batch[0].Topic, Partition: batch[0].Partition})
	// A partition no task reads goes to worker 0, whose topology says so.
	w := l.workers[l.owners[id]]
	l.queued.Add(int64(len(batch)))
	w.cmds.push(func() { w.processBatch(batch) })
	return nil
}

// handleFailure handles a worker's failure: every worker halts, then the epoch is dropped
// and processing goes on from the committed offsets (retry), or the application stops
// unless the state database is at fault.
func (l *loop) handleFailure() error {
	f := l.takeFailure()
	if f == nil {
		return nil
	}
	return l.handle(f)
}

func (l *loop) handle(f *failure) error {
	if f.retry {
		return l.retry(f.err)
	}
	l.halt()
	l.epoch.abortAfterFailure()
	return l.recoverState(f.err)
}

// halt stops the workers' processing before an epoch is dropped: each drops what it was
// given and what reaches its inbox, until its topology is built again.
func (l *loop) halt() {
	for _, w := range l.workers {
		w.failed.Store(true)
	}
	_ = l.all(func(*worker) error { return nil })
	l.takeFailure() // what the halted workers ran into belongs to the dropped epoch
}

// commitTick is how often the commit barrier runs: every commit.interval.ms, or, with
// commit.interval.ms = 0 (Kafka Streams' "commit as often as possible"), every poll.ms
// besides after every batch (commitAfterBatch), as Kafka Streams commits in every
// iteration of its poll loop.
func (l *loop) commitTick() time.Duration {
	if l.a.cfg.CommitInterval > 0 {
		return l.a.cfg.CommitInterval
	}
	return l.a.cfg.PollTime
}

// commitAfterBatch closes the epoch after each processed batch when commit.interval.ms is 0.
func (l *loop) commitAfterBatch() error {
	if l.a.cfg.CommitInterval > 0 {
		return nil
	}
	if err := l.commit(false); err != nil {
		return err
	}
	l.swapStaged()
	return nil
}

// swapStaged swaps in a reloaded topology right after a commit barrier: the epoch is
// closed, so every record before it went through the old topology and every record after
// it goes through the new one, and the consumer goes on from where it is. The workers are
// as many as the new config's num.stream.threads, each with the runtime the reload loaded
// for it, and the tasks stay on their workers where they can. The replaced workers' runtimes
// stay open while the new topology is on probation (rollback.go).
func (l *loop) swapStaged() {
	c := l.staged
	if c == nil || l.epoch.open() {
		return
	}
	l.staged = nil
	base := l.a.reload.base.Load()
	old := l.workers
	l.useWorkers(l.workersOn(c.runtimes()), c.cfg)
	if err := l.rebuildTopology(); err != nil {
		for _, w := range l.workers {
			w.stop()
		}
		l.useWorkers(old, base.cfg)
		if rerr := l.rebuildTopology(); rerr != nil {
			err = errors.Join(err, rerr)
		}
		l.a.reloadFailed(fmt.Errorf("build the new topology: %w", err))
		return
	}
	replaced := make([]workerRuntime, len(old))
	for i, w := range old {
		replaced[i] = w.retire()
	}
	l.startProbation(&reloadCandidate{cfg: base.cfg, rt: replaced[0].rt, b: replaced[0].b, more: replaced[1:], base: base})
	l.b = c.b
	l.a.reloaded(c)
}

// publishTasks shares which worker runs each task with the HTTP handlers (GET /v1/status).
func (l *loop) publishTasks() {
	byID := make(map[string]int, len(l.owners))
	for id, w := range l.owners {
		byID[id.String()] = w
	}
	l.a.tasks.Store(&byID)
}

// taskIDsOf lists the tasks of an assignment.
func taskIDsOf(owners map[pipeline.TaskID]int) []pipeline.TaskID {
	out := make([]pipeline.TaskID, 0, len(owners))
	for id := range owners {
		out = append(out, id)
	}
	return out
}

// assignTasks gives the workers the application's tasks, evenly and stickily, after a
// rebalance's barrier: a task that moves is closed where it ran (its state committed) and
// made afresh on its new worker.
func (l *loop) assignTasks() error {
	var ids []pipeline.TaskID
	err := l.workers[0].do(func() error {
		ids = l.workers[0].topo.TaskIDs()
		return nil
	})
	if err != nil {
		return err
	}
	if l.active != nil {
		// In a streams group the agent runs only the tasks the broker gave it.
		ids = slices.DeleteFunc(ids, func(id pipeline.TaskID) bool { return !l.active[id] })
	}
	owners := assignTasks(ids, len(l.workers), l.owners)
	l.owners = owners
	l.ex.SetOwners(owners)
	l.publishTasks()
	return l.all(func(w *worker) error { return w.moveTasks(tasksOf(owners, w.id)) })
}

// punctuate has every worker run its wall-clock punctuators that are due and apply the
// watermark, which idle partitions may have moved; what they emit belongs to the epoch. A
// worker busy with its records punctuates at the next tick.
func (l *loop) punctuate() error {
	if l.standby {
		return nil
	}
	var wall, wm bool
	for _, w := range l.workers {
		wall = wall || w.wallClock.Load()
		wm = wm || w.listening.Load()
	}
	if !wall && !wm {
		return nil
	}
	if wm {
		l.markIdle()
	}
	if err := l.epoch.begin(); err != nil {
		return err
	}
	for _, w := range l.workers {
		// A worker busy with its records punctuates at the next tick.
		if w.cmds.len() == 0 {
			w.cmds.push(w.punctuate)
		}
	}
	return nil
}

// markIdle tells the topology which partitions are idle: nothing of them is waiting to be
// processed and their consumer has been at the log end for max.task.idle.ms. The consumer
// learns where the log ends from its fetches, so that view can be one fetch.max.wait.ms old:
// a partition must stay caught up for at least that long too, or a partition whose records
// are merely not fetched yet would let the watermark run ahead of them.
func (l *loop) markIdle() {
	need := max(l.a.cfg.MaxTaskIdle, config.FetchMaxWait.Get(l.a.cfg.Client(config.ForConsumer)))
	now := time.Now()
	buffered := len(l.k.consumer.Messages()) > 0 || l.queued.Load() > 0
	for tp, lag := range l.k.consumer.Lag() {
		if lag > 0 || buffered {
			delete(l.caughtUpSince, tp)
			l.time.SetIdle(tp, false)
			continue
		}
		since, ok := l.caughtUpSince[tp]
		if !ok {
			since = now
			l.caughtUpSince[tp] = now
		}
		l.time.SetIdle(tp, now.Sub(since) >= need)
	}
}

// reportProgress exports, once per epoch, consumer lag and the engine's time
// (publishTime).
func (l *loop) reportProgress() {
	m := l.a.metrics
	for tp, lag := range l.k.consumer.Lag() {
		m.ConsumerLag.WithLabelValues(tp.Topic, strconv.Itoa(int(tp.Partition))).Set(float64(lag))
	}
	l.publishTime()
}

// publishTime exports the engine's time (each source partition's stream time, the
// watermark and how far it trails the wall clock) and shares it, with each partition's
// consumer lag and each task's (reportTaskLags), with the HTTP handlers (GET /v1/status). It runs at every commit and every
// punctuation tick, so the watermark a partition's idleness moves shows without a commit.
// Where no processor waits for the watermark the workers do not move it per record, so
// it is moved here, idleness first.
func (l *loop) publishTime() {
	listening := false
	for _, w := range l.workers {
		listening = listening || w.listening.Load()
	}
	if !listening {
		l.markIdle()
		l.time.Advance()
	}
	view := l.time.Time()
	lags, positions := l.k.consumer.Lag(), l.k.consumer.Positions()
	out := &console.TimeStatus{Watermark: view.Watermark, Partitions: make([]console.PartitionStatus, len(view.Partitions))}
	for i, p := range view.Partitions {
		tp := pipeline.TopicPartition{Topic: p.Topic, Partition: p.Partition}
		lag, ok := lags[tp]
		if !ok {
			lag = -1
		}
		pos, ok := positions[tp]
		if !ok {
			pos = -1
		}
		out.Partitions[i] = console.PartitionStatus{Topic: p.Topic, Partition: p.Partition, StreamTime: p.StreamTime,
			Idle: p.Idle, HoldsBack: p.HoldsBack, Lag: lag, Position: pos}
	}
	l.a.time.Store(out)
	l.reportTaskLags(lags)
	m := l.a.metrics
	for _, p := range view.Partitions {
		if p.StreamTime >= 0 {
			m.StreamTime.WithLabelValues(p.Topic, strconv.Itoa(int(p.Partition))).Set(float64(p.StreamTime))
		}
	}
	if view.Watermark >= 0 {
		m.Watermark.Set(float64(view.Watermark))
		m.WatermarkLag.Set(float64(time.Now().UnixMilli()-view.Watermark) / 1000)
	}
}

// reportUncommitted sets the uncommitted-bytes gauge of every store.
func (l *loop) reportUncommitted() {
	if l.db == nil {
		return
	}
	by := l.db.UncommittedBytesByStore()
	for _, s := range l.b.Stores() {
		l.a.metrics.UncommittedSize.WithLabelValues(s.Name).Set(float64(by[s.Name]))
	}
}

// applyTaps installs the hooks of the watched nodes in every worker's topology.
func (l *loop) applyTaps() {
	l.a.taps.Apply(workerTaps{l})
}

// workerTaps sets a tap in every worker's topology, on the worker's goroutine.
type workerTaps struct{ l *loop }

// ValueSerde is the first worker's builder's: every worker's scripts made the same graph.
func (t workerTaps) ValueSerde(node string) pipeline.Serde { return t.l.b.ValueSerde(node) }

func (t workerTaps) SetTap(node string, fn pipeline.TapFunc) error {
	return t.l.all(func(w *worker) error { return w.topo.SetTap(node, fn) })
}

// commit is the commit barrier; wait says the offsets must be committed when it returns (a
// rebalance, a shutdown), not in the background (epoch.commitInBackground). The workers
// first process what they were given and what they re-keyed for each other, and flush
// their record caches (quiesce); then the epoch commits as one, every worker's records
// with it.
func (l *loop) commit(wait bool) error {
	// A corruption found by any read (a script may have swallowed the error, or an
	// interactive query found it) means the epoch may stand on damaged state: it is never
	// committed, and an idle application rebuilds too.
	if l.db != nil {
		if err := l.db.Corruption(); err != nil {
			return l.rebuildCorruptState(err)
		}
	}
	start := time.Now()
	if err := l.quiesce(); err != nil {
		if errors.Is(err, kafkaio.ErrFenced) {
			return l.retry(err)
		}
		// A script error downstream of a cache, as in processing.
		l.halt()
		l.epoch.abortAfterFailure()
		return l.recoverState(err)
	}
	// A worker that failed while the barrier ran: its epoch is not committed.
	if f := l.takeFailure(); f != nil {
		return l.handle(f)
	}
	pending := l.db != nil && len(l.db.Changelog()) > 0
	if !l.epoch.open() && !pending {
		if wait {
			if err := l.epoch.settle(); err != nil {
				return l.retry(err)
			}
		}
		return nil
	}
	committed, err := l.epoch.commit(start, wait)
	if err != nil {
		return l.retry(err)
	}
	if c := l.epoch.committing; c != nil && !l.epoch.eos {
		l.changelogGate.Store(&c.changelogAcked)
	}
	if committed {
		l.reportUncommitted()
		l.reportProgress()
		l.probationCommitted()
	}
	return nil
}

// quiesce brings the workers to the barrier: each has processed what it was given, the
// exchange is empty, every record cache is flushed and what it forwarded processed (a
// flush forwards into other workers' tasks, whose caches then flush in turn), and the
// processors that keep state in memory have written it. It adds the workers' consumed
// offsets to the epoch and exports their Lua time and their tasks' stream times.
func (l *loop) quiesce() error {
	if len(l.workers) == 0 {
		return nil
	}
	if err := l.all(func(*worker) error { return nil }); err != nil {
		return err
	}
	l.ex.WaitQuiet(nil)
	for {
		var flushed atomic.Bool
		err := l.all(func(w *worker) error {
			if w.failed.Load() {
				return nil
			}
			f, err := w.topo.FlushRecordCaches()
			if f {
				flushed.Store(true)
			}
			return err
		})
		if err != nil {
			return err
		}
		l.ex.WaitQuiet(nil)
		if !flushed.Load() {
			break
		}
	}
	offsets := make([]map[pipeline.TopicPartition]int64, len(l.workers))
	records := make([]int, len(l.workers))
	err := l.all(func(w *worker) error {
		offsets[w.id] = map[pipeline.TopicPartition]int64{}
		records[w.id] = w.takeConsumed(offsets[w.id])
		w.reportLua()
		w.reportTaskTimes()
		if w.failed.Load() {
			return nil
		}
		return w.topo.PrepareCommit()
	})
	for i := range l.workers {
		for tp, next := range offsets[i] {
			l.epoch.consumed(tp, next, 0)
		}
		l.epoch.records += records[i]
	}
	return err
}

// retry handles an epoch that failed (epoch.fail): a corrupt state database is rebuilt; an
// epoch the epoch dropped goes on from the committed offsets. A store write LevelDB did not
// take (an *applyError) is the database's fault: it is rebuilt if corrupt, else it stops
// the application. The workers halt first.
func (l *loop) retry(cause error) error {
	l.halt()
	var apply *applyError
	if errors.As(cause, &apply) {
		return l.recoverState(apply.err)
	}
	if l.stateCorrupt(cause) {
		return l.rebuildCorruptState(cause)
	}
	// Under exactly-once the epoch before may still be writing its store writes to LevelDB,
	// its transaction committed: dropping this epoch must not drop them, so a write that
	// failed is handled first, as the database's fault.
	if l.epoch.eos {
		if err := l.epoch.settle(); err != nil {
			return l.retry(err)
		}
	}
	if l.rollsBack(cause) {
		return l.rollBack(cause)
	}
	rejoined, err := l.epoch.fail(cause)
	if err != nil {
		return err
	}
	if rejoined {
		l.a.state.SetReason("rejoining the group after the producer was fenced")
	}
	return l.resumeFromCommitted(cause)
}

// resumeFromCommitted goes on from the committed state after a dropped epoch: fresh
// topologies, and the consumer back at the committed offsets.
func (l *loop) resumeFromCommitted(cause error) error {
	if err := l.rebuildTopology(); err != nil {
		return errors.Join(cause, err)
	}
	if err := l.k.consumer.Rewind(); err != nil {
		return errors.Join(cause, fmt.Errorf("rewind to the committed offsets: %w", err))
	}
	return nil
}

// rebuildTopology builds every worker's topology again, on l.db, with a fresh time and
// exchange, for the tasks the workers run: after a dropped epoch the processors'
// in-memory state starts again from the committed state.
func (l *loop) rebuildTopology() error {
	if len(l.workers) == 0 {
		return nil
	}
	l.time = pipeline.NewGlobalTime()
	if l.assignment != nil {
		l.time.SetAssignment(l.k.sourcesOnly(l.assignment))
	}
	l.ex = pipeline.NewExchange(len(l.workers), exchangeCapacity, l.time)
	l.ex.SetOwners(l.owners)
	l.sources = l.workers[0].b.SourceTasks()
	owners := l.owners
	if err := l.all(func(w *worker) error { return w.build(tasksOf(owners, w.id)) }); err != nil {
		return err
	}
	l.internal = l.workers[0].internal
	l.applyTaps()
	return l.publishAppTasks()
}

// wipeAndRestore is Kafka Streams' behaviour for non-transactional stores under
// exactly-once: after an aborted transaction the local state may hold uncommitted writes,
// so every store partition is wiped and restored from its changelog. The stores hold the
// committed epochs, and the transaction of the last one may still be completing (its
// coordinator moving, the cluster restarting): a restore reads only what is stable, so the
// wipe waits until the changelogs are stable past what the stores hold.
func (l *loop) wipeAndRestore() error {
	ctx := context.Background()
	partitions := l.k.maxPartitions()
	if err := l.a.retryKafka(ctx, "waiting for the changelogs to be stable", func() error {
		return l.a.changelogsStable(ctx, l.db, l.b, l.k, partitions)
	}); err != nil {
		return err
	}
	var errs []error
	for _, s := range l.b.Stores() {
		for p := int32(0); p < partitions; p++ {
			errs = append(errs, l.db.Wipe(s.Name, p))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return l.a.restore(ctx, l.db, l.b, l.k, partitions, nil)
}

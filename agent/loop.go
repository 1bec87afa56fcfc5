package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/console"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/luart"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

// loop is the processing goroutine: it runs consumed records through the topology and
// closes an epoch at each commit barrier (every commit.interval.ms, or early when the
// stores' uncommitted bytes cross statestore.uncommitted.max.bytes); epoch.go says what the
// barrier commits.
type loop struct {
	a     *Agent
	k     *kafkaClients
	topo  *pipeline.Topology
	db    *state.DB // nil without stores; replaceDB tells the epoch a rebuilt one
	b     *pipeline.StreamsBuilder
	epoch *epoch

	// caughtUpSince is when each partition's consumer last reached the log end.
	caughtUpSince map[pipeline.TopicPartition]time.Time
	// build makes a fresh topology from a builder, with the running store provider and
	// global update schedule. After a dropped epoch the processors' in-memory state
	// (operator stream times, buffers, punctuators) starts again from the committed state,
	// as Kafka Streams re-initialises a corrupted task; a reload builds its new topology
	// the same way. assignment is re-applied.
	build      func(*pipeline.StreamsBuilder) (*pipeline.Topology, error)
	assignment []pipeline.TopicPartition

	assigned chan []pipeline.TopicPartition
	revoke   chan chan error
	done     chan struct{}

	everRunning bool
	consumed    map[string]prometheus.Counter
	// rt is the Lua runtime the topology calls; lastLua is the part of each node's Lua
	// time already exported.
	rt      *luart.Runtime
	lastLua map[string]time.Duration
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

// newLoop makes the loop of a run; startTopology builds its topology.
func newLoop(a *Agent, k *kafkaClients, db *state.DB, b *pipeline.StreamsBuilder) *loop {
	l := &loop{
		a: a, k: k, db: db, b: b,
		epoch:    newEpoch(a, k, db, b.Stores()),
		assigned: make(chan []pipeline.TopicPartition),
		revoke:   make(chan chan error),
		done:     make(chan struct{}),
		consumed: map[string]prometheus.Counter{},

		caughtUpSince: map[pipeline.TopicPartition]time.Time{},
	}
	l.epoch.sendLetter = func(d *deadLetter) error { return l.sendDeadLetter(d, nil) }
	l.epoch.restore = l.wipeAndRestore
	l.handleProductionErrors()
	return l
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
			l.staged.rt.Close()
			l.a.reloadFailed(errors.New("the agent stopped before the next commit barrier"))
		}
		l.endProbation()
	}()
	ticker := time.NewTicker(l.commitTick())
	defer ticker.Stop()
	// Wall-clock punctuators are checked between batches and at least this often.
	punctuate := time.NewTicker(min(l.commitTick(), 100*time.Millisecond))
	defer punctuate.Stop()
	msgs := l.k.consumer.Messages()
	errs := l.k.consumer.Errors()
	var subscriptions chan subscriptionChange // nil (never ready) without source patterns
	if l.b.HasPatternSources() {
		subscriptions = make(chan subscriptionChange)
		watchCtx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		go l.watchPatterns(watchCtx, subscriptions)
	}
	progress := &l.a.progress
	defer progress.wait()
	for {
		progress.wait()
		select {
		case <-ctx.Done():
			progress.step(time.Now())
			return l.commit(true)
		case batch := <-msgs:
			progress.step(time.Now()) // and process marks the start of each record
			if err := l.process(batch); err != nil {
				if err := l.retry(err); err != nil {
					return err
				}
				continue
			}
			// The changelog records go as they are written, while the epoch goes on, so the
			// barrier waits for less. Under exactly-once they are in the epoch's transaction
			// and abort with it; under at-least-once a dropped epoch may leave some in the
			// changelog, as a crash does, and processing its records again writes them again.
			if err := l.epoch.sendChangelog(); err != nil {
				if err := l.retry(err); err != nil {
					return err
				}
				continue
			}
			if err := l.recoverState(l.punctuate()); err != nil {
				return err
			}
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
			if err := l.recoverState(l.punctuate()); err != nil {
				return err
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
			l.a.taps.Apply(l.topo)
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
			reply <- err
			if err != nil {
				return err
			}
			if cur := l.a.state.Current(); cur == StateRunning || cur == StateStandby {
				_ = l.a.state.Transition(StateRebalancing)
			}
		case tps := <-l.assigned:
			progress.step(time.Now())
			if standby, err := l.takeRole(ctx, tps); err != nil || standby {
				if err != nil && ctx.Err() == nil {
					return err
				}
				continue
			}
			l.a.log.Info("partitions assigned", "partitions", len(tps))
			l.a.log.Debug("assignment", "partitions", tps)
			l.topo.SetAssignment(tps)
			l.assignment = tps
			clear(l.caughtUpSince)
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
// it goes through the new one, and the consumer goes on from where it is.
func (l *loop) swapStaged() {
	c := l.staged
	if c == nil || l.epoch.open() {
		return
	}
	l.staged = nil
	topo, err := l.build(c.b)
	if err != nil {
		c.rt.Close()
		l.a.reloadFailed(fmt.Errorf("build the new topology: %w", err))
		return
	}
	if l.assignment != nil {
		topo.SetAssignment(l.assignment)
	}
	base := l.a.reload.base.Load()
	l.startProbation(&reloadCandidate{cfg: base.cfg, rt: l.rt, b: l.b, base: base})
	l.topo, l.b, l.rt = topo, c.b, c.rt
	l.chargeLua()
	l.a.taps.Apply(l.topo)
	l.a.reloaded(c)
}

// punctuate runs the wall-clock punctuators that are due and lets idle partitions stop
// holding the watermark back; what they emit belongs to the epoch.
func (l *loop) punctuate() error {
	wall, wm := l.topo.HasWallClockPunctuators(), l.topo.HasWatermarkListeners()
	if !wall && !wm || l.standby {
		return nil
	}
	if err := l.epoch.begin(); err != nil {
		return l.retry(err)
	}
	if wall {
		if err := l.topo.PunctuateWallClock(); err != nil {
			l.epoch.abortAfterFailure()
			return err
		}
	}
	if wm {
		l.markIdle()
		if err := l.topo.AdvanceWatermark(); err != nil {
			l.epoch.abortAfterFailure()
			return err
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
	buffered := len(l.k.consumer.Messages()) > 0
	for tp, lag := range l.k.consumer.Lag() {
		if lag > 0 || buffered {
			delete(l.caughtUpSince, tp)
			l.topo.SetIdle(tp, false)
			continue
		}
		since, ok := l.caughtUpSince[tp]
		if !ok {
			since = now
			l.caughtUpSince[tp] = now
		}
		l.topo.SetIdle(tp, now.Sub(since) >= need)
	}
}

// reportProgress exports, once per epoch, the Lua time of each node, consumer lag and the
// engine's time (publishTime).
func (l *loop) reportProgress() {
	m := l.a.metrics
	l.reportLua()
	for tp, lag := range l.k.consumer.Lag() {
		m.ConsumerLag.WithLabelValues(tp.Topic, strconv.Itoa(int(tp.Partition))).Set(float64(lag))
	}
	l.publishTime()
}

// publishTime exports the engine's time (each source partition's stream time, the
// watermark and how far it trails the wall clock) and shares it, with each partition's
// consumer lag, with the HTTP handlers (GET /v1/status). It runs at every commit and every
// punctuation tick, so the watermark a partition's idleness moves shows without a commit.
// Where no processor waits for the watermark the topology does not move it per record, so
// it is moved here, idleness first.
func (l *loop) publishTime() {
	if !l.topo.HasWatermarkListeners() {
		l.markIdle()
		// With no processor waiting, moving the watermark runs nothing that could fail.
		_ = l.topo.AdvanceWatermark()
	}
	view := l.topo.Time()
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

// chargeLua makes the runtime keep each node's Lua time; the runtime asks the running
// topology, whichever it is, which node calls.
func (l *loop) chargeLua() {
	if l.rt == nil {
		return
	}
	l.rt.ChargeNodes(func() string { return l.topo.CurrentNode() })
	l.lastLua = map[string]time.Duration{}
}

// reportLua adds each node's Lua time since the last report to the Lua time metric. Time
// spent outside any node (loading the scripts) counts under node "".
func (l *loop) reportLua() {
	if l.rt == nil {
		return
	}
	spent := maps.Clone(l.rt.LuaTimeByNode())
	if spent == nil {
		spent = map[string]time.Duration{}
	}
	outside := l.rt.LuaTime()
	for _, d := range spent {
		outside -= d
	}
	spent[""] += outside
	for node, d := range spent {
		if delta := d - l.lastLua[node]; delta > 0 {
			l.a.metrics.LuaTime.WithLabelValues(node).Add(delta.Seconds())
			l.lastLua[node] = d
		}
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

func (l *loop) process(batch []pipeline.SourceRecord) error {
	if len(batch) == 0 {
		return nil
	}
	if err := l.epoch.begin(); err != nil {
		return err
	}
	m := l.a.metrics
	// A batch holds records of one partition (Consumer.Messages), so what is counted per
	// partition is counted once per batch, for the records processed so far.
	tp := pipeline.TopicPartition{Topic: batch[0].Topic, Partition: batch[0].Partition}
	consumed := func(n int) {
		if n == 0 {
			return
		}
		l.consumedCounter(tp.Topic).Add(float64(n))
		l.epoch.consumed(tp, batch[n-1].Offset+1, n)
	}
	// One clock read per record: a record's end is the next one's start.
	start := time.Now()
	for i := range batch {
		l.a.progress.step(start)
		// The records sent while processing msg name it if the broker refuses them.
		msg := &batch[i]
		err := l.topo.Process(msg)
		if err != nil {
			// A store that found its database corrupt failed the record, whatever error
			// reached here (a script may wrap it): the database is rebuilt, the record
			// not skipped.
			if l.stateCorrupt(err) {
				return err
			}
			// A record the handler continued on is skipped, and consumed like any other.
			if err := l.handleRecordError(msg, err); err != nil {
				consumed(i)
				return err
			}
		}
		end := time.Now()
		m.ProcessLatency.Observe(end.Sub(start).Seconds())
		start = end
	}
	consumed(len(batch))
	return nil
}

func (l *loop) consumedCounter(topic string) prometheus.Counter {
	c, ok := l.consumed[topic]
	if !ok {
		c = l.a.metrics.RecordsConsumed.WithLabelValues(topic)
		l.consumed[topic] = c
	}
	return c
}

// commit is the commit barrier; wait says the offsets must be committed when it returns (a
// rebalance, a shutdown), not in the background (epoch.commitInBackground).
func (l *loop) commit(wait bool) error {
	// A corruption found by any read (a script may have swallowed the error, or an
	// interactive query found it) means the epoch may stand on damaged state: it is never
	// committed, and an idle application rebuilds too.
	if l.db != nil {
		if err := l.db.Corruption(); err != nil {
			return l.rebuildCorruptState(err)
		}
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
	start := time.Now()
	// What the record caches hold was produced in this epoch and is forwarded with it.
	if err := l.topo.FlushCaches(); err != nil {
		if errors.Is(err, kafkaio.ErrFenced) {
			return l.retry(err)
		}
		l.epoch.abortAfterFailure() // a script error downstream of a cache, as in process()
		return l.recoverState(err)
	}
	committed, err := l.epoch.commit(start, wait)
	if err != nil {
		return l.retry(err)
	}
	if committed {
		l.reportUncommitted()
		l.reportProgress()
		l.probationCommitted()
	}
	return nil
}

// retry handles an epoch that failed (epoch.fail): a corrupt state database is rebuilt; an
// epoch the epoch dropped goes on from the committed offsets. A store write LevelDB did not
// take (an *applyError) is the database's fault: it is rebuilt if corrupt, else it stops
// the application.
func (l *loop) retry(cause error) error {
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

// resumeFromCommitted goes on from the committed state after a dropped epoch: a fresh
// topology, and the consumer back at the committed offsets.
func (l *loop) resumeFromCommitted(cause error) error {
	if err := l.rebuildTopology(); err != nil {
		return errors.Join(cause, err)
	}
	if err := l.k.consumer.Rewind(); err != nil {
		return errors.Join(cause, fmt.Errorf("rewind to the committed offsets: %w", err))
	}
	return nil
}

// rebuildTopology builds the topology again, on l.db, for the assigned partitions: after a
// dropped epoch the processors' in-memory state starts again from the committed state.
func (l *loop) rebuildTopology() error {
	if l.build == nil {
		return nil
	}
	topo, err := l.build(l.b)
	if err != nil {
		return fmt.Errorf("rebuild the topology: %w", err)
	}
	l.topo = topo
	if l.assignment != nil {
		l.topo.SetAssignment(l.assignment)
	}
	l.a.taps.Apply(l.topo)
	return nil
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
	return l.a.restore(ctx, l.db, l.b, l.k, partitions)
}

package agent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/agent/query"
	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

// Several agents of one application (replicas of a sidecar, a rolling update) share its
// consumer group. The group's assignment (kafkaio.ActiveStrategy) makes exactly one of
// them active, owning every source partition; the others are standbys in state STANDBY.
// The warm ones (num.standby.replicas) follow the changelogs into their own state, so
// that a takeover replays only the tail.

// standbyPace is how often a warm standby reads the changelogs' new records: every second
// while that works, and after failures (a broker down) at doubling waits up to half a
// minute, so an outage costs a warning per wait rather than one a second.
var standbyPace = followPace{every: time.Second, max: 30 * time.Second}

type followPace struct{ every, max time.Duration }

// activeStrategy is the group strategy of this agent: it reports the agent's identity and
// how far its state follows the changelogs at every join.
func (a *Agent) activeStrategy() *kafkaio.ActiveStrategy {
	return kafkaio.NewActiveStrategy(a.cfg.NumStandbyReplicas, func() kafkaio.MemberState {
		return kafkaio.MemberState{InstanceID: a.cfg.GroupInstanceID, Host: a.cfg.ApplicationServer, Position: a.statePosition()}
	})
}

// statePosition is the sum, over every logged store partition, of the next changelog
// offset the local state would read: the larger, the more caught-up (kafkaio.MemberState).
func (a *Agent) statePosition() int64 {
	c := a.stores.Load()
	if c == nil || c.DB == nil {
		return 0
	}
	var pos int64
	for _, s := range c.Specs {
		if !s.Logged || c.Global[s.Name] {
			continue
		}
		for p := range c.Partitions {
			applied, ok, err := c.DB.ChangelogOffset(s.Name, p)
			if err == nil && ok {
				pos += applied + 1
			}
		}
	}
	return pos
}

// activeMember names the active agent of the application for GET /readyz and metadata
// queries: its group.instance.id and its application.server ("" until known).
func (a *Agent) activeMember() (instance, host string) {
	if r := a.group.Load(); r != nil {
		return r.ActiveInstance, r.ActiveHost
	}
	return "", ""
}

// takeRole applies the role the group gave this agent in the generation that starts; it
// returns true when the agent is a standby (it then processes nothing).
func (l *loop) takeRole(ctx context.Context, tps []pipeline.TopicPartition) (standby bool, err error) {
	role, rerr := l.k.group.Role()
	if rerr != nil {
		l.a.log.Error("the group's assignment could not be read; acting as a cold standby", "err", rerr)
	}
	l.a.group.Store(&role)
	m := l.a.metrics
	if !role.Active {
		m.GroupRole.WithLabelValues(metrics.RoleActive).Set(0)
		m.GroupRole.WithLabelValues(metrics.RoleStandby).Set(1)
		l.wasActive = false
		l.standby = true
		if err := l.dropTasks(); err != nil {
			return true, fmt.Errorf("standby: close the tasks run as the active: %w", err)
		}
		l.time.SetAssignment(nil)
		l.assignment = nil
		l.setTaskLags(nil)
		if role.Warm && l.db != nil {
			db := l.db // the loop may replace l.db (a rebuild); the follower keeps its own
			l.follow.start(ctx, func(ctx context.Context) { l.followChangelogs(ctx, db, nil) })
		} else {
			l.follow.stop()
			l.resetStandbyLag()
		}
		l.a.log.Info("standby: another agent of the application is active", "active", role.ActiveInstance,
			"active host", role.ActiveHost, "warm", role.Warm, "generation", role.Generation)
		if err := l.a.state.Transition(StateStandby); err != nil {
			return true, err
		}
		// A standby is up as far as systemd is concerned; the loop logs that the application
		// runs when it first processes.
		if !l.everRunning && !l.readySent {
			l.readySent = true
			l.a.notifySystemd(sdReady)
		}
		return true, nil
	}
	if len(tps) == 0 {
		return false, fmt.Errorf("the group made this agent active (generation %d) but assigned it no partition", role.Generation)
	}
	m.GroupRole.WithLabelValues(metrics.RoleStandby).Set(0)
	m.GroupRole.WithLabelValues(metrics.RoleActive).Set(1)
	l.follow.stop()
	if !l.wasActive {
		if err := l.catchUp(ctx, l.standby, nil); err != nil {
			return false, err
		}
	}
	l.wasActive = true
	l.standby = false
	return false, nil
}

// dropTasks closes the tasks the workers ran while the agent was the active: a standby runs
// none, and GET /v1/status and stoatflow_thread_tasks must not show them. The last epoch
// was committed when the partitions were revoked, so what the tasks' close flushes is
// committed already. The next time the agent is active, assignTasks hands them out afresh.
func (l *loop) dropTasks() error {
	if len(l.owners) == 0 {
		return nil
	}
	l.owners = nil
	l.ex.SetOwners(nil)
	l.publishTasks()
	return l.all(func(w *worker) error { return w.moveTasks(nil) })
}

// catchUp replays what the changelogs hold beyond the local state before this agent
// processes as the active: the previous active's last epochs. takeover says this agent was a
// standby (counted in the takeovers metric). scope narrows the replay to the store
// partitions of the agent's tasks (nil: every one).
func (l *loop) catchUp(ctx context.Context, takeover bool, scope *readScope) error {
	start := time.Now()
	if l.db != nil {
		if err := l.a.restore(ctx, l.db, l.b, l.k, l.k.maxPartitions(), scope); err != nil {
			return fmt.Errorf("take over as the active: replay the changelogs: %w", err)
		}
		// The topology's record caches may hold what the local state held before.
		if err := l.rebuildTopology(); err != nil {
			return err
		}
		// A standby runs no punctuation, so its global stores stand where its start left
		// them: they read their topics to the end before the first record is joined.
		if err := l.bootGlobalStores(ctx); err != nil {
			return fmt.Errorf("take over as the active: bootstrap the global stores: %w", err)
		}
	}
	l.resetStandbyLag()
	if takeover {
		l.a.metrics.Takeovers.Inc()
		l.a.log.Info("took over as the active agent of the application", "replayed in", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

func (l *loop) resetStandbyLag() {
	l.a.metrics.StandbyLag.Reset()
	l.a.copies.Store(nil)
}

// roleState is the loop's part of the group role.
type roleState struct {
	standby   bool // this generation made the agent a standby
	wasActive bool // the agent processed as the active since it last was a standby
	readySent bool // systemd was told READY=1 while a standby
	follow    follower
}

// follower runs a warm standby's following of the changelogs in the background.
type follower struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

func (f *follower) start(ctx context.Context, follow func(context.Context)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cancel != nil {
		return
	}
	ctx, f.cancel = context.WithCancel(ctx)
	f.done = make(chan struct{})
	go func() {
		defer close(f.done)
		follow(ctx)
	}()
}

// stop ends the following and waits until it wrote its last batch.
func (f *follower) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cancel == nil {
		return
	}
	f.cancel()
	<-f.done
	f.cancel, f.done = nil, nil
}

// followChangelogs reads, at standbyPace, the changelog records committed since the last
// round into db, in the formats the active wrote them (the restore path), and exports how
// far each store partition was behind. One reader serves every round until one fails.
// scope narrows it to some store partitions (a streams group's standby and warmup tasks');
// nil follows every one.
func (l *loop) followChangelogs(ctx context.Context, db *state.DB, scope *readScope) {
	cfg, err := kafkaio.SaramaConfig(l.a.cfg, kafkaio.RoleConsumer)
	if err != nil {
		l.a.log.Error("standby: cannot follow the changelogs", "err", err)
		return
	}
	// read is, per store partition, what the last round read. The store keeps the offset of
	// its last record; what follows it up to the end read (transaction markers, aborted
	// records) need not be read again.
	read := map[state.ChangelogPartition]followed{}
	var tr *kafkaio.TopicReader
	defer func() {
		if tr != nil {
			_ = tr.Close()
		}
	}()
	l.a.paceFollowing(ctx, standbyPace, func(ctx context.Context) error {
		if tr == nil {
			if tr, err = kafkaio.NewTopicReader(l.k.brokers, cfg); err != nil {
				return err
			}
		}
		err := l.followRound(ctx, db, tr, read, scope)
		if err != nil {
			// A fresh client next round: this one may hold connections to a broker that left.
			_ = tr.Close()
			tr = nil
		}
		return err
	})
}

// paceFollowing runs round until ctx ends, pace.every apart while rounds succeed. A failed
// round is logged with how many failed in a row and when the next comes, each wait twice
// the last up to pace.max; the first round to succeed after failures is logged too.
func (a *Agent) paceFollowing(ctx context.Context, pace followPace, round func(context.Context) error) {
	wait, failures := pace.every, 0
	for {
		err := round(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			failures++
			if failures > 1 {
				wait = min(2*wait, pace.max)
			}
			a.log.Warn("standby: following the changelogs failed; trying again", "err", err,
				"failures in a row", failures, "retry in", wait)
		case failures > 0:
			a.log.Info("standby: following the changelogs again", "after failures", failures)
			wait, failures = pace.every, 0
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// followed is what a follow round read of a changelog partition: up to to, for a store
// that stood at from (the offset after its last record) when the round began.
type followed struct{ from, to int64 }

func (l *loop) followRound(ctx context.Context, db *state.DB, tr *kafkaio.TopicReader, read map[state.ChangelogPartition]followed, scope *readScope) error {
	reads, err := l.a.changelogReads(ctx, db, l.b, tr, l.k.maxPartitions(), scope)
	if err != nil {
		return err
	}
	var errs []error
	// What stale reads answer with (query.Holding): how far each copy trails the end this
	// round read, once the round has read what it could.
	copies := make(map[state.ChangelogPartition]query.LagInfo, len(reads))
	for _, r := range reads {
		cp := state.ChangelogPartition{Store: r.store, Partition: r.partition}
		// Only while the store is where that round left it: a wiped store reads again.
		stored := r.from
		if f, ok := read[cp]; ok && r.from >= f.from && r.from < f.to && f.to <= r.end {
			r.from = f.to
		}
		l.a.metrics.StandbyLag.WithLabelValues(r.store, strconv.Itoa(int(r.partition))).Set(float64(max(r.end-r.from, 0)))
		at := max(r.from, r.end)
		if r.from < r.end {
			if _, _, err := l.a.replay(ctx, db, tr, r, scope, func(int, int64) {}); err != nil {
				errs = append(errs, fmt.Errorf("store %s partition %d from %s: %w", r.store, r.partition, r.topic, err))
				at = r.from
			} else {
				read[cp] = followed{from: stored, to: r.end}
			}
		}
		copies[cp] = query.LagInfo{CurrentOffsetPosition: at, EndOffsetPosition: r.end, OffsetLag: max(r.end-at, 0)}
	}
	if ctx.Err() == nil {
		l.a.copies.Store(&copies)
		if scope != nil && scope.followed != nil {
			scope.followed(copies)
		}
	}
	return errors.Join(errs...)
}

// readScope narrows a reading of the changelogs to some store partitions and says how it
// writes into the state database. The nil scope reads every partition and writes at once.
type readScope struct {
	want map[state.ChangelogPartition]bool
	// onDB runs each write into the database (nil: at once).
	onDB func(func() error) error
	// followed is told, after each round of following, where each partition's copy stands.
	followed func(map[state.ChangelogPartition]query.LagInfo)
}

func (s *readScope) wants(cp state.ChangelogPartition) bool { return s == nil || s.want[cp] }

func (s *readScope) write(f func() error) error {
	if s == nil || s.onDB == nil {
		return f()
	}
	return s.onDB(f)
}

package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/state"
)

// A state database can turn out corrupt long after it opened: goleveldb reads a table's
// blocks, and opens the table (reading its footer), only when a read or a compaction
// reaches them. Package state reports every such damage as ErrCorrupt (a goleveldb panic
// included) and keeps the first (state.DB.Corruption). The loop then drops the epoch,
// deletes the database, restores every store from its changelog, builds the topology on
// the new database and resumes from the committed offsets. Under exactly-once nothing of
// the dropped epoch was committed, so nothing is lost or doubled; under at-least-once its
// records are processed again, as after a crash. docs/operations.md says what operators see.

// stateCorrupt reports whether err is, or may hide, a corruption of the state database:
// errors from scripts and handlers may have lost the ErrCorrupt they wrapped, the database
// has not.
func (l *loop) stateCorrupt(err error) bool {
	if err == nil {
		return false
	}
	return errors.Is(err, state.ErrCorrupt) || (l.db != nil && l.db.Corruption() != nil)
}

// recoverState rebuilds the state database when err is (or follows) a corruption of it,
// and reports success then: processing resumes on the rebuilt stores. A failure of a
// reloaded topology on probation rolls it back (rollback.go), which reports success too.
// Other errors are returned as they are.
func (l *loop) recoverState(err error) error {
	if l.rollsBack(err) {
		return l.rollBack(err)
	}
	if !l.stateCorrupt(err) {
		return err
	}
	return l.rebuildCorruptState(err)
}

// rebuildCorruptState halts the workers, drops the epoch, rebuilds the corrupt state
// database and resumes from the committed offsets (Rewind rejoins the group; its assignment
// makes the application RUNNING again).
func (l *loop) rebuildCorruptState(cause error) error {
	l.halt()
	l.a.metrics.Commits.WithLabelValues(metrics.ResultFailure).Inc()
	if l.a.state.Current() == StateRunning {
		_ = l.a.state.Transition(StateRebalancing)
	}
	if err := l.epoch.abort(); err != nil {
		return errors.Join(cause, err)
	}
	ctx := context.Background()
	if err := l.replaceDB(ctx, "running", cause); err != nil {
		return errors.Join(cause, err)
	}
	if err := l.buildOnState(ctx); err != nil {
		return errors.Join(cause, err)
	}
	if err := l.k.consumer.Rewind(); err != nil {
		return errors.Join(cause, fmt.Errorf("rewind to the committed offsets: %w", err))
	}
	l.a.log.Info("the state database is rebuilt; processing resumes from the committed offsets")
	return nil
}

// startTopology builds the first topology and bootstraps its global stores; a database
// the bootstrap finds corrupt is rebuilt first.
func (l *loop) startTopology(ctx context.Context) error {
	err := l.buildOnState(ctx)
	if l.db == nil || !l.stateCorrupt(err) {
		return err
	}
	if err := l.replaceDB(ctx, "start", err); err != nil {
		return err
	}
	return l.buildOnState(ctx)
}

// buildOnState builds the topology on l.db and bootstraps its global stores.
func (l *loop) buildOnState(ctx context.Context) error {
	if err := l.rebuildTopology(); err != nil {
		return err
	}
	return l.bootGlobalStores(ctx)
}

// bootGlobalStores bootstraps the global stores on the topology of worker 0, which keeps
// them.
func (l *loop) bootGlobalStores(ctx context.Context) error {
	if l.db == nil || l.bootGlobals == nil {
		return nil
	}
	w := l.workers[0]
	return w.do(func() error { return l.bootGlobals(ctx, w.topo, l.db) })
}

// replaceDB rebuilds l.db from the changelogs. Interactive queries answer 503 meanwhile.
func (l *loop) replaceDB(ctx context.Context, when string, cause error) error {
	catalog := l.a.stores.Swap(nil)
	db, err := l.a.rebuildState(ctx, l.db, l.stateDir, l.b, l.k, when, cause)
	l.db, l.epoch.db = db, db
	if err != nil {
		return err
	}
	if catalog != nil {
		c := *catalog
		c.DB = db
		l.a.stores.Store(&c)
	}
	return nil
}

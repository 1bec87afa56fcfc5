package agent

import (
	"errors"
	"time"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/luart"
	"github.com/stoatflow/stoatflow/pipeline"
)

// reloadProbation is the least time a reloaded topology is on probation (docs/operations.md,
// Reload): a failure of its own in that time, or before its first epoch of records is
// committed, rolls the agent back to the topology it replaced instead of stopping it.
const reloadProbation = time.Minute

// probation is a reloaded topology's trial. A typo inside a callback passes every check a
// reload makes (no callback runs before records do) and fails on the first record: rather
// than stop the agent, which a `run --watch` edit loop would die with, the topology it
// replaced, kept in fallback until the trial ends, takes over again.
type probation struct {
	fallback  *reloadCandidate // the replaced topology, its runtime still open
	since     time.Time        // when the reloaded topology took over
	committed bool             // it has committed an epoch of records
}

// startProbation puts the topology that just replaced fallback on probation. A trial in
// progress ends: its fallback is older than the topology being replaced.
func (l *loop) startProbation(fallback *reloadCandidate) {
	l.endProbation()
	l.probation = &probation{fallback: fallback, since: time.Now()}
}

// endProbation ends the trial: the replaced topology's runtimes are closed.
func (l *loop) endProbation() {
	if p := l.probation; p != nil {
		l.probation = nil
		p.fallback.close()
	}
}

// probationCommitted notes a committed epoch of records, and ends the trial if it has also
// lasted reloadProbation.
func (l *loop) probationCommitted() {
	if p := l.probation; p != nil {
		p.committed = true
		if time.Since(p.since) >= reloadProbation {
			l.endProbation()
		}
	}
}

// rollsBack reports whether cause, an error about to stop the agent, is a failure of a
// topology on probation: of its records, punctuators or scripts, not of Kafka or of the
// state database, which the replaced topology would meet as well.
func (l *loop) rollsBack(cause error) bool {
	p := l.probation
	if p == nil || cause == nil {
		return false
	}
	if p.committed && time.Since(p.since) >= reloadProbation {
		l.endProbation()
		return false
	}
	var re *pipeline.RecordError
	var ne *pipeline.NodeError
	var se *luart.ScriptError
	var pe *kafkaio.ProduceError
	if errors.As(cause, &pe) || errors.Is(cause, kafkaio.ErrFenced) || l.stateCorrupt(cause) {
		return false
	}
	return errors.As(cause, &re) || errors.As(cause, &ne) || errors.As(cause, &se)
}

// rollBack replaces the failed topology on probation by the one it replaced, on as many
// workers as it ran on, each on its runtime again. The failed epoch is dropped whole, as a
// retried one is (under exactly-once its transaction aborts; under at-least-once what it
// sent stays sent, as after a crash), and its records are processed again from the
// committed offsets by the replaced topology: nothing is lost.
func (l *loop) rollBack(cause error) error {
	p := l.probation
	l.probation = nil
	l.a.log.Error("reload: the new topology failed on probation; rolling back to the topology it replaced, which processes the failed epoch's records again",
		"err", cause, "scripts", p.fallback.cfg.Scripts)
	l.halt()
	if l.epoch.open() {
		if err := l.epoch.abort(); err != nil {
			if !errors.Is(err, kafkaio.ErrFenced) {
				return errors.Join(cause, err)
			}
			// The abort learnt that the producer was fenced: rejoin, as a failed epoch does.
			if err := l.epoch.rejoin(errors.Join(cause, err), true); err != nil {
				return err
			}
		}
	}
	failed := l.workers
	l.useWorkers(l.workersOn(p.fallback.runtimes()), p.fallback.cfg)
	for _, w := range failed {
		w.stop()
	}
	l.b = p.fallback.b
	l.a.rolledBack(p.fallback)
	return l.resumeFromCommitted(cause)
}

// rolledBack publishes the topology a rollback returned to.
func (a *Agent) rolledBack(to *reloadCandidate) {
	a.setTopology(to.b)
	a.reload.base.Store(to.base)
	if a.opts.LogLevel != nil {
		a.opts.LogLevel.Set(to.cfg.LogLevel)
	}
	a.metrics.ReloadRollbacks.Inc()
}

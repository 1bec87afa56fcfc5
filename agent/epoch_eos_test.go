package agent

import (
	"errors"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/state"
)

const eosRig = "processing.guarantee = \"exactly_once_v2\"\n"

// commitSoon runs the barrier that need not wait, and fails the test if it does not return
// while LevelDB's writes are held: an exactly-once barrier hands the store writes of its
// committed transaction to the background.
func (r *epochRig) commitSoon(t *testing.T) {
	t.Helper()
	type result struct {
		committed bool
		err       error
	}
	done := make(chan result, 1)
	go func() {
		committed, err := r.epoch.commit(time.Now(), false)
		done <- result{committed, err}
	}()
	select {
	case res := <-done:
		if res.err != nil || !res.committed {
			t.Fatalf("commit = %v, %v; want the epoch committed", res.committed, res.err)
		}
	case <-time.After(10 * time.Second):
		r.gate.Reopen()
		<-done
		t.Fatal("the barrier waited for LevelDB's write of the committed epoch")
	}
}

// Under exactly-once the barrier returns once the transaction committed, with the epoch's
// store write held in LevelDB: the next epoch processes at once, reads the committed
// epoch's values at READ_UNCOMMITTED (READ_COMMITTED reads the last write LevelDB holds)
// and sends its changelog records; once the write is done the data and its changelog offset
// are committed state, and the epoch counts as one commit.
func TestEpochExactlyOnceAppliesTheStateInTheBackground(t *testing.T) {
	r := newEpochRig(t, eosRig)
	r.process(t, 4, "a")
	r.gate.Close()
	r.commitSoon(t)
	<-r.gate.Held()
	if got := r.committedOffset(t); got != 5 {
		t.Fatalf("committed offset %d, want 5: the transaction commits before the store write", got)
	}
	select {
	case <-r.epoch.committingDone():
		t.Fatal("the background write is done while LevelDB holds it")
	default:
	}

	r.process(t, 5, "b")
	if got := r.read(t, state.ReadUncommitted, "a"); got != "v" {
		t.Fatalf("the next epoch reads a = %q, want the committed epoch's v", got)
	}
	if got := r.stored(t, "a"); got != "" {
		t.Fatalf("READ_COMMITTED reads a = %q before LevelDB holds it, want the last written state", got)
	}
	if err := r.epoch.sendChangelog(); err != nil {
		t.Fatal(err)
	}
	if recs := r.db.TakeChangelog(); len(recs) != 0 {
		t.Fatalf("changelog records %v held back: the committed epoch's offsets are taken already", recs)
	}

	r.gate.Reopen()
	<-r.epoch.committingDone()
	if err := r.epoch.settle(); err != nil {
		t.Fatal(err)
	}
	if got := r.stored(t, "a"); got != "v" {
		t.Fatalf("store holds a = %q once written, want v", got)
	}
	if off, ok, err := r.db.ChangelogOffset(epochCounts.Name, 0); err != nil || !ok || off != 0 {
		t.Fatalf("changelog offset %d, %v, %v; want 0 (the committed epoch's record)", off, ok, err)
	}
	if got := testutil.ToFloat64(r.m.Commits.WithLabelValues(metrics.ResultSuccess)); got != 1 {
		t.Fatalf("%v successful commits, want 1", got)
	}
	if committed, err := r.epoch.commit(time.Now(), true); err != nil || !committed {
		t.Fatalf("commit of the next epoch = %v, %v", committed, err)
	}
	if got := r.stored(t, "b"); got != "v" {
		t.Fatalf("store holds b = %q after a barrier that waits, want v", got)
	}
	if off, _, _ := r.db.ChangelogOffset(epochCounts.Name, 0); off != 2 {
		t.Fatalf("changelog offset %d, want 2 (after the first transaction's marker)", off)
	}
	if got := r.committedOffset(t); got != 6 {
		t.Fatalf("committed offset %d, want 6", got)
	}
}

// The next epoch's abort while the committed epoch's store write is held keeps that write:
// once LevelDB takes it, the store holds the committed epoch and nothing of the aborted one,
// with the committed epoch's changelog offset, and the epoch after commits on top.
func TestEpochExactlyOnceAbortWhileTheStateIsAppliedKeepsIt(t *testing.T) {
	r := newEpochRig(t, eosRig+"enable.transactional.statestores = true\n")
	r.process(t, 4, "a")
	r.gate.Close()
	r.commitSoon(t)
	<-r.gate.Held()
	r.process(t, 5, "b")
	aborted := make(chan error, 1)
	go func() { aborted <- r.epoch.abort() }()
	r.gate.Reopen()
	if err := <-aborted; err != nil {
		t.Fatal(err)
	}
	if r.epoch.committingDone() != nil {
		t.Fatal("the abort left the committed epoch's write behind")
	}
	if a, b := r.stored(t, "a"), r.read(t, state.ReadUncommitted, "b"); a != "v" || b != "" {
		t.Fatalf("after the abort a = %q, b = %q; want the committed a kept, the aborted b gone", a, b)
	}
	if off, ok, err := r.db.ChangelogOffset(epochCounts.Name, 0); err != nil || !ok || off != 0 {
		t.Fatalf("changelog offset %d, %v, %v; want 0 (the committed epoch's record)", off, ok, err)
	}
	r.process(t, 5, "c")
	if committed, err := r.epoch.commit(time.Now(), true); err != nil || !committed {
		t.Fatalf("commit after the abort = %v, %v", committed, err)
	}
	if a, c := r.stored(t, "a"), r.stored(t, "c"); a != "v" || c != "v" {
		t.Fatalf("a = %q, c = %q; want both committed", a, c)
	}
	if got := r.committedOffset(t); got != 6 {
		t.Fatalf("committed offset %d, want 6", got)
	}
	if out := readCommitted(t, r.brokers, "out", 2); string(out[0].Key) != "a" || string(out[1].Key) != "c" {
		t.Fatalf("committed outputs %q, %q; want a, c", out[0].Key, out[1].Key)
	}
}

// A store write that fails after its transaction committed is the database's failure
// (ENOSPC): it is reported while the loop idles, and a later epoch that fails is not
// dropped over it (that would drop the committed epoch's writes and go on from offsets past
// them): loop.retry reports the write's failure, which stops the application (a restart
// restores the epoch from the changelog, TestDiskFullStopsTheAgentAndRestartLosesNothing).
func TestEpochExactlyOnceStateApplyErrorAfterTheCommit(t *testing.T) {
	r := newEpochRig(t, eosRig)
	r.process(t, 4, "a")
	r.disk.Fill(0)
	r.commitSoon(t)
	if got := r.committedOffset(t); got != 5 {
		t.Fatalf("committed offset %d, want 5", got)
	}
	select {
	case <-r.epoch.committingDone(): // what the idle loop waits for, then settles
	case <-time.After(10 * time.Second):
		t.Fatal("the failed write is not reported")
	}
	r.process(t, 5, "b")
	l := &loop{a: &Agent{cfg: r.cfg, log: slog.New(slog.DiscardHandler), metrics: r.m}, k: r.k, db: r.db, epoch: r.epoch}
	if err := l.retry(errors.New("a lost connection")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("retry = %v, want the store write's ENOSPC", err)
	}
}

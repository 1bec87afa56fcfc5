package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/state"
	"github.com/stoatflow/stoatflow/state/faultdisk"
)

// The state disk fills up under a running agent: the store write of an epoch whose Kafka
// transaction has committed fails, and the agent stops in ERROR with ENOSPC naming the state
// database. Restarted with space freed, it restores that epoch from the changelog (or, when
// the failed write left a torn journal record, rebuilds the whole database from the
// changelogs), and the read_committed outputs and the store hold every count exactly once.
func TestDiskFullStopsTheAgentAndRestartLosesNothing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		left    int64 // bytes free when the disk fills up
		rebuild bool  // the restart finds the database corrupt and rebuilds it
	}{
		{"nothing of the failed write reaches the disk", 0, false},
		{"the failed write is torn", 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			brokers := testBroker(t, 2, "in", "out")
			cfg := testConfig(t, brokers, countScript, "processing.guarantee = \"exactly_once_v2\"\n")
			dbDir := filepath.Join(cfg.StateDir, cfg.ApplicationID, "db")
			disk := faultdisk.New(dbDir)
			ra := startAgentOnDisk(t, cfg, disk, metrics.New())
			produceKeys(t, brokers, 2, 100, 5, 0, "v")
			checkExactCounts(t, brokers, map[string]int64{"k0": 20, "k1": 20, "k2": 20, "k3": 20, "k4": 20})

			disk.Fill(tc.left)
			produceKeys(t, brokers, 2, 100, 5, 100, "v")
			var err error
			select {
			case err = <-ra.done:
			case <-time.After(30 * time.Second):
				t.Fatal("the agent kept running on a full disk")
			}
			if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "no space left on device") ||
				!strings.Contains(err.Error(), dbDir) {
				t.Fatalf("Run = %v, want ENOSPC naming %s", err, dbDir)
			}
			t.Logf("Run: %v", err)
			if st := ra.a.State(); st != StateError {
				t.Fatalf("state %s after the disk filled up, want ERROR", st)
			}

			disk.FreeSpace()
			m := metrics.New()
			ra = startAgentOnDisk(t, cfg, disk, m)
			want := map[string]int64{"k0": 40, "k1": 40, "k2": 40, "k3": 40, "k4": 40}
			checkExactCounts(t, brokers, want)
			if err := ra.stop(t); err != nil {
				t.Fatal(err)
			}
			if got := testutil.ToFloat64(m.RecordsRestored.WithLabelValues("counts")); got == 0 {
				t.Fatal("restored nothing: the epoch whose store write failed must come back from the changelog")
			}
			if rebuilt := strings.Contains(ra.out.String(), "the state database is corrupt"); rebuilt != tc.rebuild {
				t.Fatalf("rebuilt the database: %v, want %v; log:\n%s", rebuilt, tc.rebuild, ra.out.String())
			}
			if got := storeCounts(t, dbDir, 2); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("store counts %v, want %v", got, want)
			}
		})
	}
}

// startAgentOnDisk starts an agent whose state database lives on disk, logging into ra.out.
func startAgentOnDisk(t *testing.T, cfg *config.Config, disk *faultdisk.Disk, m *metrics.Metrics) *runningAgent {
	t.Helper()
	out := &lockedBuffer{}
	a, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(out, nil)), Stdout: out, Metrics: m, State: state.Options{WrapStorage: disk.Wrap}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ra := &runningAgent{a: a, cancel: cancel, done: make(chan error, 1), out: out}
	go func() { ra.done <- a.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	if st, err := a.WaitState(wctx, StateRunning); err != nil {
		t.Fatalf("agent did not reach RUNNING (state %s): %v; log:\n%s", st, err, out.String())
	}
	return ra
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

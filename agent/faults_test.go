//go:build !race

// The fault-injection tests drive sarama's transactional producer through its error paths,
// where sarama has a known data race between its transaction manager's state and partition
// locks (IBM/sarama#2913). They run without the race detector (make test runs them in a
// separate pass); the rest of the package runs with it.

package agent

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

func TestFaultInjectedFailureExactlyOnce(t *testing.T) {
	injectedFailure(t, onKfake(t, 2, "in", "out"), true)
}

// Without transactional stores an aborted epoch wipes the stores and restores them from the
// changelogs, as Kafka Streams does; the results are the same, the cost is the restore.
func TestFaultInjectedFailureNonTransactionalStores(t *testing.T) {
	injectedFailure(t, onKfake(t, 2, "in", "out"), false)
}

// injectedFailure aborts an epoch (a record sent to a topic that does not exist) in the
// middle of the input: every count is exact, only the aborted epoch is processed again, and
// the stores are restored only without transactional stores.
func injectedFailure(t *testing.T, b *brokerUnderTest, transactional bool) {
	cfg := b.config(t, countScript, fmt.Sprintf("processing.guarantee = \"exactly_once_v2\"\nenable.transactional.statestores = %v\n", transactional))
	m := metrics.New()
	ra := startAgentWith(t, cfg, m)
	b.produceKeys(t, 300, 5, 0, "v")
	// Let the first records commit, so that the changelogs have something to restore.
	b.checkExactCounts(t, map[string]int64{"k0": 60, "k1": 60, "k2": 60, "k3": 60, "k4": 60})
	b.produceKeys(t, 1, 5, 300, "boom") // k0: its send to a missing topic aborts the epoch
	b.produceKeys(t, 99, 5, 301, "v")
	want := map[string]int64{"k0": 80, "k1": 80, "k2": 80, "k3": 80, "k4": 80}
	b.checkExactCounts(t, want)
	if got := testutil.ToFloat64(m.Commits.WithLabelValues(metrics.ResultFailure)); got < 1 {
		t.Fatalf("failed commits = %v, want the injected failure to abort at least one epoch", got)
	}
	restored := testutil.ToFloat64(m.RecordsRestored.WithLabelValues("counts"))
	if transactional && restored != 0 {
		t.Fatalf("restored %v records: an aborted epoch must not wipe the transactional store", restored)
	}
	if !transactional && restored == 0 {
		t.Fatal("restored nothing: non-transactional stores must be wiped and restored after an aborted epoch")
	}
	// Only the aborted epoch is processed again.
	consumed := testutil.ToFloat64(m.RecordsConsumed.WithLabelValues(b.topic(t, "in")))
	t.Logf("consumed %v records for 400 inputs (%v replayed), %v records restored", consumed, consumed-400, restored)
	if consumed <= 400 || consumed-400 > 400 {
		t.Fatalf("consumed %v records for 400 inputs: want the aborted epoch, and no more, replayed", consumed)
	}
	if err := ra.stop(t); err != nil {
		t.Fatal(err)
	}
	// The store holds the exact counts.
	db, err := state.Open(filepath.Join(cfg.StateDir, cfg.ApplicationID, "db"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for p := int32(0); p < 2; p++ {
		s, err := db.TimestampedKeyValueStore(pipeline.StoreSpec{Name: "counts", Type: pipeline.TimestampedKeyValueStoreType, Logged: true}, p)
		if err != nil {
			t.Fatal(err)
		}
		it := s.All(false)
		for it.Next() {
			if got, w := int64(binary.BigEndian.Uint64(it.Value())), want[string(it.Key())]; got > w {
				t.Fatalf("store %s = %d, more than %d", it.Key(), got, w)
			}
		}
		it.Close()
	}
}

// TestFaultSIGKILLLoopExactlyOnce kills the agent process with SIGKILL at random points while it
// counts, restarts it each time, and checks that the read_committed output holds every
// count exactly once and the store the exact totals.
func TestFaultSIGKILLLoopExactlyOnce(t *testing.T) {
	sigkillLoop(t, onKfake(t, 2, "in", "out"), 6)
}

// sigkillLoop is TestFaultSIGKILLLoopExactlyOnce with kills kills (STOATFLOW_SOAK_KILLS
// overrides it).
func sigkillLoop(t *testing.T, b *brokerUnderTest, kills int) {
	if testing.Short() {
		t.Skip("kills processes; not in -short")
	}
	cfg := b.config(t, countScript, "processing.guarantee = \"exactly_once_v2\"\n")
	path := filepath.Join(cfg.Dir, "agent.toml")
	toml := fmt.Sprintf(`
[agent]
scripts = ["p.lua"]
http.listen = "127.0.0.1:0"
[streams]
application.id = %q
bootstrap.servers = %q
processing.guarantee = "exactly_once_v2"
commit.interval.ms = 50
state.dir = %q
`, cfg.ApplicationID, strings.Join(b.brokers, ","), cfg.StateDir)
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	// The input arrives in slices while the agent is being killed. `make soak` raises the
	// number of kills (STOATFLOW_SOAK_KILLS).
	if n, err := strconv.Atoi(os.Getenv("STOATFLOW_SOAK_KILLS")); err == nil && n > 0 {
		kills = n
	}
	const keys = 20
	total := 600 * (kills + 1)
	per := total / (kills + 1)
	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "STOATFLOW_TEST_AGENT_CONFIG="+path)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	for i := 0; i < kills; i++ {
		b.produceKeys(t, per, keys, i*per, "v")
		cmd := start()
		// Fault injection: let it run for a random moment, then kill it without warning.
		time.Sleep(time.Duration(200+rand.IntN(800)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
	}
	b.produceKeys(t, total-kills*per, keys, kills*per, "v")
	cmd := start()
	want := map[string]int64{}
	for i := 0; i < total; i++ {
		want[fmt.Sprintf("k%d", i%keys)]++
	}
	b.checkExactCounts(t, want)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("agent exit: %v", err)
	}
	got := storeCounts(t, filepath.Join(cfg.StateDir, cfg.ApplicationID, "db"), 2)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("store counts %v, want %v", got, want)
	}
	t.Logf("%d kills survived, %d records checked", kills, total)
}

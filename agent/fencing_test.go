//go:build !race

// Fencing drives sarama's transactional producer through its error paths, where sarama has
// a known data race (IBM/sarama#2913, see faults_test.go): these run in make test's pass
// without the race detector.

package agent

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/metrics"
)

// fenceWithProducer starts a producer with the agent's transactional id, which fences the
// agent's producer, and closes it.
func fenceWithProducer(t *testing.T, cfg *config.Config) {
	t.Helper()
	pc, err := kafkaio.SaramaConfig(cfg, kafkaio.RoleProducer)
	if err != nil {
		t.Fatal(err)
	}
	kafkaio.MakeTransactional(pc, cfg, "")
	p, err := kafkaio.NewProducer(cfg.BootstrapServers, pc)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFaultFencedProducerRejoins: a producer fenced by another producer with its transactional id is Kafka Streams'
// TaskMigratedException: the agent drops the epoch, rejoins, renews its producer and goes
// on from the committed offsets with its state: every count exactly once in the
// read_committed output, and the store exact.
func TestFaultFencedProducerRejoins(t *testing.T) {
	fencedProducerRejoins(t, onKfake(t, 2, "in", "out"))
}

func fencedProducerRejoins(t *testing.T, b *brokerUnderTest) {
	const keys, n = 5, 200
	cfg := b.config(t, countScript, "processing.guarantee = \"exactly_once_v2\"\n")
	m := metrics.New()
	ra := startAgentWith(t, cfg, m)
	b.produceKeys(t, n, keys, 0, "v")
	b.checkExactCounts(t, wantCounts(n, keys))
	fenceWithProducer(t, cfg)
	b.produceKeys(t, n, keys, n, "v")
	b.checkExactCounts(t, wantCounts(2*n, keys))
	if got := testutil.ToFloat64(m.Commits.WithLabelValues(metrics.ResultFailure)); got < 1 {
		t.Fatalf("%v failed commits: the producer was never fenced", got)
	}
	if st := ra.a.State(); st != StateRunning {
		t.Fatalf("state %s, want RUNNING", st)
	}
	if err := ra.stop(t); err != nil {
		t.Fatalf("stop: %v", err)
	}
	got := storeCounts(t, filepath.Join(cfg.StateDir, cfg.ApplicationID, "db"), 2)
	if fmt.Sprint(got) != fmt.Sprint(wantCounts(2*n, keys)) {
		t.Fatalf("store counts %v, want %v", got, wantCounts(2*n, keys))
	}
}

// TestFaultTakenOverByAnotherAgentStops: a second agent with the same group.instance.id takes the application over: the first
// one's producer is fenced and its rejoin refused, so it stops cleanly, saying why in its
// log and on /readyz, and the second goes on exactly once from the committed offsets.
func TestFaultTakenOverByAnotherAgentStops(t *testing.T) {
	takenOverByAnotherAgentStops(t, onKfake(t, 2, "in", "out"))
}

func takenOverByAnotherAgentStops(t *testing.T, b *brokerUnderTest) {
	const keys, n = 5, 100
	extra := "processing.guarantee = \"exactly_once_v2\"\ngroup.instance.id = \"shared\"\n"
	cfg := b.config(t, countScript, extra)
	logs := &lockedBuffer{}
	first, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- first.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if _, err := first.WaitState(wctx, StateRunning); err != nil {
		t.Fatal(err)
	}
	b.produceKeys(t, n, keys, 0, "v")
	b.checkExactCounts(t, wantCounts(n, keys))

	// The same application and instance id, its own state directory.
	dir := b.config(t, countScript, extra).Dir
	toml := regexp.MustCompile(`application.id = "[^"]*"`).ReplaceAllString(agentTOML(b.brokers, dir, "it", extra+"commit.interval.ms = 50\n"),
		fmt.Sprintf("application.id = %q", cfg.ApplicationID))
	secondCfg, err := config.Parse([]byte(toml), dir, "second.toml")
	if err != nil {
		t.Fatal(err)
	}
	second := startAgent(t, secondCfg)
	defer second.stop(t)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the first agent stopped with %v, want a clean stop", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the first agent kept running after another agent took its group.instance.id; its log:\n%s", logs)
	}
	log := logs.String()
	if !strings.Contains(log, "another agent took the application over") {
		t.Fatalf("the first agent's log does not say it was taken over:\n%s", log)
	}
	if st, reason := first.state.CurrentWithReason(); st != StateNotRunning || !strings.Contains(reason, `group.instance.id "shared" took the application over`) {
		t.Fatalf("first agent: state %s, reason %q", st, reason)
	}
	b.produceKeys(t, n, keys, n, "v")
	b.checkExactCounts(t, wantCounts(2*n, keys))
	if st := second.a.State(); st != StateRunning {
		t.Fatalf("second agent: state %s, want RUNNING", st)
	}
}

// TestFaultSIGSTOPLongerThanTransactionTimeout: pausedLongerThanTheTransactionTimeout.
func TestFaultSIGSTOPLongerThanTransactionTimeout(t *testing.T) {
	pausedLongerThanTheTransactionTimeout(t, onKfake(t, 2, "in", "out"))
}

// pausedLongerThanTheTransactionTimeout pauses the agent process (SIGSTOP) inside a
// transaction until the broker has aborted it (transaction.timeout.ms is 500 ms) and
// fenced its producer. After SIGCONT the zombie's writes stay invisible (every count
// exactly once in the read_committed output), and the agent
// rejoins and goes on (it does not exit) until SIGTERM stops it cleanly; the store holds
// the exact totals.
func pausedLongerThanTheTransactionTimeout(t *testing.T, b *brokerUnderTest) {
	if testing.Short() {
		t.Skip("stops processes; not in -short")
	}
	const keys, n = 10, 300
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
commit.interval.ms = 200
producer.transaction.timeout.ms = 500
state.dir = %q
`, cfg.ApplicationID, strings.Join(b.brokers, ","), cfg.StateDir)
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "STOATFLOW_TEST_AGENT_CONFIG="+path)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill() }()
	logged := func() string {
		stderr.mu.Lock()
		defer stderr.mu.Unlock()
		return stderr.b.String()
	}
	b.produceKeys(t, n, keys, 0, "v")
	b.checkExactCounts(t, wantCounts(n, keys))
	// Pause it inside a transaction: records keep arriving, so an epoch is open nearly
	// always; a pause that fell between two epochs is repeated.
	txnID := cfg.ApplicationID + "-" + cfg.GroupInstanceID
	total := n
	for pause := 0; ; pause++ {
		if pause == 5 {
			t.Fatalf("no pause fell inside a transaction; agent log:\n%s", logged())
		}
		b.produceKeys(t, 1000, keys, total, "v")
		total += 1000
		if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		state, epoch := txnState(t, b.brokers, txnID)
		if state == "Ongoing" {
			// The broker's transaction timer runs while the process is stopped.
			pollFor(t, 30*time.Second, "the broker aborting the paused agent's transaction", func() bool {
				s, e := txnState(t, b.brokers, txnID)
				return s != "Ongoing" || e != epoch
			})
		}
		if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		if state == "Ongoing" {
			break
		}
		b.checkExactCounts(t, wantCounts(total, keys))
	}
	pollFor(t, 30*time.Second, "the resumed agent finding its producer fenced", func() bool {
		return strings.Contains(logged(), "the producer was fenced")
	})
	select {
	case err := <-exited:
		t.Fatalf("the agent exited (%v) after the pause; log:\n%s", err, logged())
	default:
	}
	b.checkExactCounts(t, wantCounts(total, keys))
	b.produceKeys(t, n, keys, total, "v")
	total += n
	b.checkExactCounts(t, wantCounts(total, keys))
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Fatalf("agent exit: %v; log:\n%s", err, logged())
	}
	got := storeCounts(t, filepath.Join(cfg.StateDir, cfg.ApplicationID, "db"), 2)
	if fmt.Sprint(got) != fmt.Sprint(wantCounts(total, keys)) {
		t.Fatalf("store counts %v, want %v", got, wantCounts(total, keys))
	}
}

// txnState is the state of transactional ID id's transaction as its coordinator describes
// it ("Empty", "Ongoing", "PrepareAbort", "CompleteAbort", ...) and its producer epoch.
func txnState(t *testing.T, brokers []string, id string) (string, int16) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("describe transaction %s: %v", id, err)
	}
	if len(resp.TransactionStates) != 1 {
		t.Fatalf("describe transaction %s: %+v", id, resp)
	}
	s := resp.TransactionStates[0]
	if err := kerr.ErrorForCode(s.ErrorCode); err != nil {
		t.Fatalf("describe transaction %s: %v", id, err)
	}
	return s.State, s.ProducerEpoch
}

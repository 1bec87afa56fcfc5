//go:build !race

// Like faults_test.go, this drives sarama's transactional producer through an aborted
// transaction, so it runs without the race detector (IBM/sarama#2913); make test runs it in
// its TestFault pass.

package agent

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/metrics"
)

// kcatCounts reads topic out from the beginning to its end with kcat (librdkafka) at the
// given isolation level and returns, per key, how often each count was seen. The value is
// decoded by kcat itself as a big-endian signed 64-bit integer (`-s value=>q`).
func kcatCounts(t *testing.T, kcat, broker, isolation string) map[string]map[int64]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, "-C", "-b", broker, "-t", "out",
		"-X", "isolation.level="+isolation, "-o", "beginning", "-e", "-q",
		"-s", "value=>q", "-f", "%k %s %p %o\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("kcat (%s): %v\n%s", isolation, err, stderr.String())
	}
	seen := map[string]map[int64]int{}
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 {
			t.Fatalf("kcat (%s): unexpected line %q", isolation, sc.Text())
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			t.Fatalf("kcat (%s): value of line %q: %v", isolation, sc.Text(), err)
		}
		if seen[f[0]] == nil {
			seen[f[0]] = map[int64]int{}
		}
		seen[f[0]][n]++
	}
	return seen
}

// kcatPath finds kcat; without it the test fails in CI (which installs it) and is skipped
// elsewhere.
func kcatPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("kcat not found (CI is set; .ci/run installs the Debian package kcat): %v", err)
	}
	t.Skip("kcat not installed (Debian package kcat)")
	return ""
}

// TestFaultKcatReadCommitted checks the exactly-once output with a second, independent Kafka
// client: kcat (librdkafka) reading at read_committed sees every key's counts 1..n exactly
// once although one epoch was aborted, and at read_uncommitted it sees the aborted epoch's
// records as duplicates, which shows the check can fail.
func TestFaultKcatReadCommitted(t *testing.T) {
	kcat := kcatPath(t)
	brokers := testBroker(t, 2, "in", "out")
	cfg := testConfig(t, brokers, countScript, "processing.guarantee = \"exactly_once_v2\"\n")
	ra := startAgentWith(t, cfg, metrics.New())
	stopped := false
	defer func() {
		if !stopped {
			_ = ra.stop(t)
		}
	}()
	produceKeys(t, brokers, 2, 300, 5, 0, "v")
	produceKeys(t, brokers, 2, 1, 5, 300, "boom") // k0: its send to a missing topic aborts the epoch
	produceKeys(t, brokers, 2, 99, 5, 301, "v")
	want := map[string]int64{"k0": 80, "k1": 80, "k2": 80, "k3": 80, "k4": 80}

	reached := func(seen map[string]map[int64]int) bool {
		for k, n := range want {
			if int64(len(seen[k])) < n {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(60 * time.Second)
	for !reached(kcatCounts(t, kcat, brokers[0], "read_committed")) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out; kcat read_committed saw %v", kcatCounts(t, kcat, brokers[0], "read_committed"))
		}
		time.Sleep(200 * time.Millisecond) // poll interval between kcat runs
	}
	// With the agent stopped no transaction is open, so the final reads are complete.
	stopped = true
	if err := ra.stop(t); err != nil {
		t.Fatal(err)
	}

	committed := kcatCounts(t, kcat, brokers[0], "read_committed")
	for k, n := range want {
		for i := int64(1); i <= n; i++ {
			if committed[k][i] != 1 {
				t.Fatalf("read_committed: key %s count %d seen %d times (want exactly once); all: %v", k, i, committed[k][i], committed[k])
			}
		}
		if int64(len(committed[k])) != n {
			t.Fatalf("read_committed: key %s counts %v, want 1..%d", k, committed[k], n)
		}
	}
	if len(committed) != len(want) {
		t.Fatalf("read_committed: keys %v, want %v", committed, want)
	}

	uncommitted := kcatCounts(t, kcat, brokers[0], "read_uncommitted")
	dups := 0
	for _, counts := range uncommitted {
		for _, times := range counts {
			dups += times - 1
		}
	}
	if dups == 0 {
		t.Fatalf("read_uncommitted saw no duplicates: the aborted epoch's records should be in the log; all: %v", uncommitted)
	}
	t.Logf("kcat: read_committed exact for %d keys; read_uncommitted saw %d aborted duplicates", len(want), dups)
}

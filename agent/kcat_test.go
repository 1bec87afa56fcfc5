//go:build !race

// Like faults_test.go, this drives sarama's transactional producer through an aborted
// transaction, so it runs without the race detector (IBM/sarama#2913); make test runs it in
// its TestFault pass.

package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatflow/metrics"
)

// kcatCounts reads topic from the beginning to its end with kcat (librdkafka) at the
// given isolation level and returns, per key, how often each count was seen. The value is
// decoded by kcat itself as a big-endian signed 64-bit integer (`-s value=>q`).
func kcatCounts(t *testing.T, kcat, broker, topic, isolation string) map[string]map[int64]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, "-C", "-b", broker, "-t", topic,
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

// franzCounts reads topic from the beginning to its end with franz-go at read_committed
// and returns, per key, how often each count (a big-endian int64 value) was seen. The end
// is the log end when it is called: read with no transaction open, the last offset of each
// partition is a transaction marker or a record, which franz-go hands over with
// KeepControlRecords.
func franzCounts(t *testing.T, brokers []string, topic string) map[string]map[int64]int {
	t.Helper()
	client, err := sarama.NewClient(brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	parts, err := client.Partitions(topic)
	if err != nil {
		client.Close()
		t.Fatal(err)
	}
	ends, start := map[int32]int64{}, map[int32]kgo.Offset{}
	for _, p := range parts {
		end, err := client.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			client.Close()
			t.Fatal(err)
		}
		if end > 0 {
			ends[p], start[p] = end, kgo.NewOffset().AtStart()
		}
	}
	client.Close()
	seen := map[string]map[int64]int{}
	if len(ends) == 0 {
		return seen
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for len(ends) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("franz-go: %s not read to its end %v: %v", topic, ends, err)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("franz-go: %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset+1 >= ends[r.Partition] {
				delete(ends, r.Partition)
			}
			if r.Attrs.IsControl() {
				return
			}
			if len(r.Value) != 8 {
				t.Fatalf("franz-go: %s-%d@%d: value %x is not a long", topic, r.Partition, r.Offset, r.Value)
			}
			k := string(r.Key)
			if seen[k] == nil {
				seen[k] = map[int64]int{}
			}
			seen[k][int64(binary.BigEndian.Uint64(r.Value))]++
		})
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

// TestFaultKcatReadCommitted checks the exactly-once output with two more, independent
// Kafka clients (eosReadByTwoClients).
func TestFaultKcatReadCommitted(t *testing.T) {
	eosReadByTwoClients(t, onKfake(t, 2, "in", "out"))
}

// eosReadByTwoClients checks the exactly-once output with two independent Kafka clients
// beside sarama: kcat (librdkafka) and franz-go reading at read_committed see every key's
// counts 1..n exactly once although one epoch was aborted, and at read_uncommitted kcat
// sees the aborted epoch's records as duplicates, which shows the check can fail.
func eosReadByTwoClients(t *testing.T, b *brokerUnderTest) {
	kcat := kcatPath(t)
	cfg := b.config(t, countScript, "processing.guarantee = \"exactly_once_v2\"\n")
	ra := startAgentWith(t, cfg, metrics.New())
	stopped := false
	defer func() {
		if !stopped {
			_ = ra.stop(t)
		}
	}()
	b.produceKeys(t, 300, 5, 0, "v")
	b.produceKeys(t, 1, 5, 300, "boom") // k0: its send to a missing topic aborts the epoch
	b.produceKeys(t, 99, 5, 301, "v")
	want := map[string]int64{"k0": 80, "k1": 80, "k2": 80, "k3": 80, "k4": 80}
	out, broker := b.topic(t, "out"), strings.Join(b.brokers, ",")

	reached := func(seen map[string]map[int64]int) bool {
		for k, n := range want {
			if int64(len(seen[k])) < n {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(60 * time.Second)
	for !reached(kcatCounts(t, kcat, broker, out, "read_committed")) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out; kcat read_committed saw %v", kcatCounts(t, kcat, broker, out, "read_committed"))
		}
		time.Sleep(200 * time.Millisecond) // poll interval between kcat runs
	}
	// With the agent stopped no transaction is open, so the final reads are complete.
	stopped = true
	if err := ra.stop(t); err != nil {
		t.Fatal(err)
	}

	for client, committed := range map[string]map[string]map[int64]int{
		"kcat":     kcatCounts(t, kcat, broker, out, "read_committed"),
		"franz-go": franzCounts(t, b.brokers, out),
	} {
		for k, n := range want {
			for i := int64(1); i <= n; i++ {
				if committed[k][i] != 1 {
					t.Fatalf("%s read_committed: key %s count %d seen %d times (want exactly once); all: %v", client, k, i, committed[k][i], committed[k])
				}
			}
			if int64(len(committed[k])) != n {
				t.Fatalf("%s read_committed: key %s counts %v, want 1..%d", client, k, committed[k], n)
			}
		}
		if len(committed) != len(want) {
			t.Fatalf("%s read_committed: keys %v, want %v", client, committed, want)
		}
	}

	uncommitted := kcatCounts(t, kcat, broker, out, "read_uncommitted")
	dups := 0
	for _, counts := range uncommitted {
		for _, times := range counts {
			dups += times - 1
		}
	}
	if dups == 0 {
		t.Fatalf("read_uncommitted saw no duplicates: the aborted epoch's records should be in the log; all: %v", uncommitted)
	}
	t.Logf("kcat and franz-go: read_committed exact for %d keys; read_uncommitted saw %d aborted duplicates", len(want), dups)
}

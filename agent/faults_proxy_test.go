//go:build !race

// Broker connection drops go through sarama's transactional error paths (see faults_test.go
// for why these run without the race detector).

package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
)

const (
	proxyFaultRecords    = 2000
	proxyFaultPartitions = 3
	// Long enough that a cut usually lands inside an epoch, with its sends and (under
	// exactly-once) its transaction still open.
	proxyFaultCommitInterval = "commit.interval.ms = 200\n"
)

// TestFaultBrokerConnectionDropsAtLeastOnce cuts every connection between the agent and the
// broker while a stateless pipeline works through its input: every input must reach the
// output at least once, and the agent must carry on by itself.
func TestFaultBrokerConnectionDropsAtLeastOnce(t *testing.T) {
	b := testProxiedBroker(t, proxyFaultPartitions, "in", "out")
	m := metrics.New()
	ra := startAgentWith(t, testConfig(t, b.Addrs(), upperScript, proxyFaultCommitInterval), m)
	defer ra.stop(t)
	faults := cutWhileProcessing(t, b, m, proxyFaultRecords, proxyFaultRecords, func() bool { return true })
	waitProduced(t, ra, m, "out", proxyFaultRecords)

	seen := map[string]bool{}
	out := readUntil(t, b.Addrs(), "out", func(got []*sarama.ConsumerMessage) bool {
		if len(got) > 0 {
			r := got[len(got)-1]
			seen[string(r.Key)+"="+string(r.Value)] = true
		}
		return len(seen) == proxyFaultRecords
	})
	for i := range proxyFaultRecords {
		if kv := fmt.Sprintf("k%d=V%d@t", i, i); !seen[kv] {
			t.Fatalf("output lacks %s; %d distinct outputs", kv, len(seen))
		}
	}
	requireRunning(t, ra)
	t.Logf("%s; %d records, all in the output (%d outputs read, at least %d of them repeats)",
		faults, proxyFaultRecords, len(out), len(out)-proxyFaultRecords)
}

// TestFaultBrokerConnectionDropsExactlyOnce does the same under exactly_once_v2 with a
// counting store: the read_committed output holds every count exactly once and the store
// the exact totals.
func TestFaultBrokerConnectionDropsExactlyOnce(t *testing.T) {
	const keys = 20
	b := testProxiedBroker(t, proxyFaultPartitions, "in", "out")
	cfg := testConfig(t, b.Addrs(), countScript, "processing.guarantee = \"exactly_once_v2\"\n"+proxyFaultCommitInterval)
	m := metrics.New()
	ra := startAgentWith(t, cfg, m)
	// The store's uncommitted bytes show an epoch is open: its transaction has begun, its
	// outputs are sent and its offsets and changelog records are not yet committed.
	midEpoch := func() bool { return testutil.ToFloat64(m.UncommittedSize.WithLabelValues("counts")) > 0 }
	faults := cutWhileProcessing(t, b, m, proxyFaultRecords, keys, midEpoch)
	waitProduced(t, ra, m, "out", proxyFaultRecords)

	want := map[string]int64{}
	for i := range proxyFaultRecords {
		want[fmt.Sprintf("k%d", i%keys)]++
	}
	checkExactCounts(t, b.Addrs(), want)
	requireRunning(t, ra)
	if err := ra.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := storeCounts(t, filepath.Join(cfg.StateDir, cfg.ApplicationID, "db"), proxyFaultPartitions); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("store counts %v, want %v", got, want)
	}
	t.Logf("%s; %d records counted exactly once, %v epochs aborted, %v records consumed",
		faults, proxyFaultRecords, testutil.ToFloat64(m.Commits.WithLabelValues(metrics.ResultFailure)),
		testutil.ToFloat64(m.RecordsConsumed.WithLabelValues("in")))
}

// cutWhileProcessing feeds total records in four slices, bypassing the proxy, and drops the
// agent's broker connections while it works through them: a cut once it has consumed half
// of the first slice, another at half of the second, and a third at half of the third
// that also refuses reconnections for about a second, while the last slice arrives. Each
// cut also waits for ready (e.g. an open epoch) and for the agent to be connected. It
// returns a summary of what it did.
func cutWhileProcessing(t *testing.T, b *proxiedBroker, m *metrics.Metrics, total, keys int, ready func() bool) string {
	t.Helper()
	consumed := func() float64 { return testutil.ToFloat64(m.RecordsConsumed.WithLabelValues("in")) }
	slice := total / 4
	cuts, dropped := 0, 0
	var outage time.Time
	for i := range 3 {
		feedDirect(t, b, slice, i*slice, keys)
		pollFor(t, 20*time.Second, fmt.Sprintf("the agent did not consume half of slice %d", i+1), func() bool {
			return consumed() >= float64(i*slice+slice/2) && ready() && b.proxy.open() > 0
		})
		var n int
		if i < 2 {
			n = b.proxy.Cut()
		} else {
			outage = time.Now()
			n = b.proxy.Refuse()
		}
		cuts++
		dropped += n
	}
	feedDirect(t, b, total-3*slice, 3*slice, keys)
	pollFor(t, 10*time.Second, "the agent did not try to reconnect during the outage", func() bool {
		return b.proxy.refused.Load() > 0
	})
	// The outage is the fault itself: it lasts a second whatever the agent does.
	<-time.After(time.Until(outage.Add(time.Second)))
	b.proxy.Restore()
	return fmt.Sprintf("%d cuts dropped %d connections, the last one followed by a %v outage that refused %d reconnections",
		cuts, dropped, time.Since(outage).Round(100*time.Millisecond), b.proxy.refused.Load())
}

// feedDirect writes n records from the index from on: key k<i mod keys> in the partition the
// default partitioner gives it, value v<i>, header trace=t. It bypasses the proxy, and
// its producer is idempotent (saramaTestConfig), so the input is exact whatever the faults.
func feedDirect(t *testing.T, b *proxiedBroker, n, from, keys int) {
	t.Helper()
	prod, err := sarama.NewSyncProducer(b.Addrs(), b.direct(saramaTestConfig()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	msgs := make([]*sarama.ProducerMessage, 0, n)
	for i := from; i < from+n; i++ {
		key := fmt.Sprintf("k%d", i%keys)
		msgs = append(msgs, &sarama.ProducerMessage{
			Topic: "in", Partition: pipeline.DefaultPartition([]byte(key), proxyFaultPartitions),
			Key:     sarama.StringEncoder(key),
			Value:   sarama.StringEncoder(fmt.Sprintf("v%d", i)),
			Headers: []sarama.RecordHeader{{Key: []byte("trace"), Value: []byte("t")}},
		})
	}
	if err := prod.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
}

// requireRunning checks the agent is (back) in RUNNING, and reports Run's error if it stopped.
func requireRunning(t *testing.T, ra *runningAgent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := ra.a.WaitState(ctx, StateRunning, StateError, StateNotRunning)
	if st != StateRunning {
		failStopped(t, ra, st, err)
	}
}

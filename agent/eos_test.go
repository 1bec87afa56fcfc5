package agent

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

// countScript counts records per key in a logged store and emits (key, count).
const countScript = `
local s = require("stoat")
local b = s.builder()
b:addStateStore{name = "counts", type = "timestampedKeyValue", valueSerde = "long"}
local counted = b:stream("in"):process(function()
  local store
  return {
    init = function(ctx) store = ctx:getStateStore("counts") end,
    process = function(ctx, k, v, r)
      local n = (store:get(k) or 0) + 1
      store:put(k, n)
      if v == "boom" and not exploded then
        -- The first time only: a write to a topic that does not exist fails the epoch.
        exploded = true
        ctx:forward(nil, "x", {to = "KSTREAM-SINK-0000000003"})
      end
      ctx:forward(k, n, {to = "KSTREAM-SINK-0000000002"})
    end,
  }
end, {stores = {"counts"}})
counted:to("out", {valueSerde = "long"})
counted:to("missing-topic", {valueSerde = "string", keySerde = "string"})
return b
`

func readCommittedConfig() *sarama.Config {
	c := saramaTestConfig()
	c.Consumer.IsolationLevel = sarama.ReadCommitted
	return c
}

// produceKeys writes n records spread over keys k0..k(keys-1) to "in", each to the
// partition (of partitions) the default partitioner gives its key.
func produceKeys(t *testing.T, brokers []string, partitions int32, n, keys, from int, value string) {
	t.Helper()
	produceKeysTo(t, brokers, "in", partitions, n, keys, from, value)
}

// produceKeysTo is produceKeys to topic.
func produceKeysTo(t *testing.T, brokers []string, topic string, partitions int32, n, keys, from int, value string) {
	t.Helper()
	prod, err := sarama.NewSyncProducer(brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var msgs []*sarama.ProducerMessage
	for i := from; i < from+n; i++ {
		key := fmt.Sprintf("k%d", i%keys)
		msgs = append(msgs, &sarama.ProducerMessage{
			Topic: topic, Partition: pipeline.DefaultPartition([]byte(key), partitions),
			Key:   sarama.StringEncoder(key),
			Value: sarama.StringEncoder(value),
		})
	}
	if err := prod.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
}

// The exactly-once checks count what the agent made of its input, so the input must hold
// each record once, also when the broker appends a produce request and answers it with a
// retriable error: the test producer's retry must not write the records again.
func TestTestInputIsExactWhenTheBrokerTimesOutAnAppend(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "in"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	// kfake answers a produce faulted with REQUEST_TIMED_OUT after appending it.
	timedOut := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "in", Err: kerr.RequestTimedOut})
	brokers := cluster.ListenAddrs()
	produceKeys(t, brokers, 2, 20, 5, 0, "v")
	if timedOut.Hits() != 1 {
		t.Fatalf("the timeout answered %d produce requests, want 1", timedOut.Hits())
	}
	client, err := sarama.NewClient(brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	var held int64
	for p := int32(0); p < 2; p++ {
		end, err := client.GetOffset("in", p, sarama.OffsetNewest)
		if err != nil {
			t.Fatal(err)
		}
		held += end
	}
	if held != 20 {
		t.Fatalf("the input holds %d records, want the 20 produced", held)
	}
}

// wantCounts is what checkExactCounts expects after total records over keys keys.
func wantCounts(total, keys int) map[string]int64 {
	want := map[string]int64{}
	for i := range total {
		want[fmt.Sprintf("k%d", i%keys)]++
	}
	return want
}

// checkExactCounts reads out under read_committed until every key reached want[key] and
// checks that each key's counts are exactly 1..want, each once.
func checkExactCounts(t *testing.T, brokers []string, want map[string]int64) {
	t.Helper()
	checkExactCountsOf(t, brokers, "out", want)
}

// checkExactCountsOf is checkExactCounts of topic.
func checkExactCountsOf(t *testing.T, brokers []string, topic string, want map[string]int64) {
	t.Helper()
	ch := consumeAll(t, brokers, topic, readCommittedConfig())
	seen := map[string]map[int64]int{}
	done := func() bool {
		for k, n := range want {
			if int64(len(seen[k])) < n {
				return false
			}
		}
		return true
	}
	// The deadline is for progress, not for the whole read: a million keys take minutes to
	// count, a stalled agent shows within the minute.
	const stall = 60 * time.Second
	idle := time.NewTimer(stall)
	defer idle.Stop()
	for !done() {
		select {
		case m := <-ch:
			k := string(m.Key)
			if seen[k] == nil {
				seen[k] = map[int64]int{}
			}
			seen[k][int64(binary.BigEndian.Uint64(m.Value))]++
			idle.Reset(stall)
		case <-idle.C:
			var short []string
			for k, n := range want {
				if int64(len(seen[k])) < n {
					short = append(short, fmt.Sprintf("%s: %v of 1..%d", k, seen[k], n))
				}
			}
			slices.Sort(short)
			t.Fatalf("no new count for %v; %d keys short of their counts, e.g. %v", stall, len(short), short[:min(len(short), 10)])
		}
	}
	// Drain what is already there, then check for duplicates and overshoot.
	for {
		select {
		case m := <-ch:
			seen[string(m.Key)][int64(binary.BigEndian.Uint64(m.Value))]++
			continue
		case <-time.After(500 * time.Millisecond):
		}
		break
	}
	for k, n := range want {
		for i := int64(1); i <= n; i++ {
			if seen[k][i] != 1 {
				t.Fatalf("key %s count %d seen %d times (want exactly once); all: %v", k, i, seen[k][i], seen[k])
			}
		}
		if int64(len(seen[k])) != n {
			t.Fatalf("key %s: counts %v, want 1..%d", k, seen[k], n)
		}
	}
}

func TestUncommittedBudgetForcesEarlyCommits(t *testing.T) {
	uncommittedBudgetForcesEarlyCommits(t, onKfake(t, 1, "in", "out"))
}

func uncommittedBudgetForcesEarlyCommits(t *testing.T, b *brokerUnderTest) {
	cfg := b.config(t, countScript, "processing.guarantee = \"exactly_once_v2\"\nstatestore.uncommitted.max.bytes = 200\ncommit.interval.ms = 60000\n")
	m := metrics.New()
	ra := startAgentWith(t, cfg, m)
	defer ra.stop(t)
	b.produceKeys(t, 500, 50, 0, "v")
	want := map[string]int64{}
	for i := 0; i < 50; i++ {
		want[fmt.Sprintf("k%d", i)] = 10
	}
	b.checkExactCounts(t, want)
	if got := testutil.ToFloat64(m.EarlyCommits); got < 1 {
		t.Fatalf("early commits = %v, want > 0 with a 200-byte budget and a 60 s commit interval", got)
	}
}

func TestRestoreAfterDeletingStateGivesSameStore(t *testing.T) {
	restoreAfterDeletingState(t, onKfake(t, 2, "in", "out"))
}

func restoreAfterDeletingState(t *testing.T, b *brokerUnderTest) {
	cfg := b.config(t, countScript, "processing.guarantee = \"exactly_once_v2\"\n")
	ra := startAgentWith(t, cfg, metrics.New())
	b.produceKeys(t, 150, 7, 0, "v")
	readAll(t, b.brokers, b.topic(t, "out"), 150)
	if err := ra.stop(t); err != nil {
		t.Fatal(err)
	}
	dbDir := filepath.Join(cfg.StateDir, cfg.ApplicationID, "db")
	before := dumpCounts(t, dbDir)
	if err := os.RemoveAll(dbDir); err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	ra = startAgentWith(t, cfg, m)
	if err := ra.stop(t); err != nil {
		t.Fatal(err)
	}
	after := dumpCounts(t, dbDir)
	if fmt.Sprint(before) != fmt.Sprint(after) || len(after) == 0 {
		t.Fatalf("restored store differs:\nbefore %v\nafter  %v", before, after)
	}
	if got := testutil.ToFloat64(m.RecordsRestored.WithLabelValues("counts")); got < 7 {
		t.Fatalf("restored %v records", got)
	}
}

func dumpCounts(t *testing.T, dir string) map[string]string {
	t.Helper()
	db, err := state.Open(dir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]string{}
	for p := int32(0); p < 2; p++ {
		s, err := db.TimestampedKeyValueStore(pipeline.StoreSpec{Name: "counts", Type: pipeline.TimestampedKeyValueStoreType, Logged: true}, p)
		if err != nil {
			t.Fatal(err)
		}
		it := s.All(false)
		for it.Next() {
			out[fmt.Sprintf("%d/%s", p, it.Key())] = fmt.Sprintf("%x@%d", it.Value(), it.Timestamp())
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		it.Close()
	}
	return out
}

// storeCounts reads the counts store of every partition.
func storeCounts(t *testing.T, dir string, partitions int32) map[string]int64 {
	t.Helper()
	db, err := state.Open(dir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got := map[string]int64{}
	for p := range partitions {
		s, err := db.TimestampedKeyValueStore(pipeline.StoreSpec{Name: "counts", Type: pipeline.TimestampedKeyValueStoreType, Logged: true}, p)
		if err != nil {
			t.Fatal(err)
		}
		it := s.All(false)
		for it.Next() {
			got[string(it.Key())] = int64(binary.BigEndian.Uint64(it.Value()))
		}
		err = it.Err()
		it.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return got
}

// Under exactly-once the changelog records of an epoch go out while it runs (in its
// transaction), not all at the commit barrier: with a commit a minute away, a
// read_uncommitted reader already sees them, and a read_committed one does not.
func TestChangelogRecordsSentBeforeTheCommitUnderExactlyOnce(t *testing.T) {
	changelogSentBeforeTheCommitUnderExactlyOnce(t, onKfake(t, 1, "in", "out"))
}

func changelogSentBeforeTheCommitUnderExactlyOnce(t *testing.T, b *brokerUnderTest) {
	cfg := changelogSentBeforeTheCommit(t, b, "exactly_once_v2")
	changelog := pipeline.ChangelogTopic(cfg.ApplicationID, "counts")
	if end := committedEnd(t, b.brokers, changelog); end != 0 {
		t.Fatalf("changelog committed up to offset %d a minute before the commit", end)
	}
}

// changelogSentBeforeTheCommit runs the counting script under guarantee with a commit a
// minute away, writes 20 keys and waits for a read_uncommitted reader to see their 20
// changelog records.
func changelogSentBeforeTheCommit(t *testing.T, b *brokerUnderTest, guarantee string) *config.Config {
	t.Helper()
	cfg := b.config(t, countScript, fmt.Sprintf("processing.guarantee = %q\ncommit.interval.ms = 60000\n", guarantee))
	ra := startAgent(t, cfg)
	t.Cleanup(func() { _ = ra.stop(t) })
	b.produceKeys(t, 20, 20, 0, "v")
	changelog := pipeline.ChangelogTopic(cfg.ApplicationID, "counts")
	uncommitted := consumeAll(t, b.brokers, changelog, saramaTestConfig())
	seen := map[string]bool{}
	deadline := time.After(20 * time.Second)
	for len(seen) < 20 {
		select {
		case m := <-uncommitted:
			seen[string(m.Key)] = true
		case <-deadline:
			t.Fatalf("%d of 20 changelog records sent before the commit", len(seen))
		}
	}
	return cfg
}

package agent

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
)

// A state database LevelDB finds corrupt is not used: the agent deletes it and rebuilds
// every store from its changelog, and the store ends up as it was.
func TestCorruptStateIsRebuiltFromChangelog(t *testing.T) {
	corruptStateIsRebuiltFromChangelog(t, onKfake(t, 2, "in", "out"))
}

func corruptStateIsRebuiltFromChangelog(t *testing.T, b *brokerUnderTest) {
	cfg := b.config(t, countScript, "processing.guarantee = \"exactly_once_v2\"\n")
	ra := startAgentWith(t, cfg, metrics.New())
	b.produceKeys(t, 120, 6, 0, "v")
	readAll(t, b.brokers, b.topic(t, "out"), 120)
	if err := ra.stop(t); err != nil {
		t.Fatal(err)
	}
	dbDir := filepath.Join(cfg.StateDir, cfg.ApplicationID, "db")
	before := dumpCounts(t, dbDir)
	manifests, err := filepath.Glob(filepath.Join(dbDir, "MANIFEST-*"))
	if err != nil || len(manifests) == 0 {
		t.Fatalf("no LevelDB manifest in %s: %v", dbDir, err)
	}
	for _, m := range manifests {
		if err := os.WriteFile(m, []byte(strings.Repeat("garbage!", 200)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := metrics.New()
	ra = startAgentWith(t, cfg, m)
	if err := ra.stop(t); err != nil {
		t.Fatal(err)
	}
	if after := dumpCounts(t, dbDir); len(after) == 0 || fmtMap(after) != fmtMap(before) {
		t.Fatalf("rebuilt store differs:\nbefore %v\nafter  %v", before, after)
	}
	if got := testutil.ToFloat64(m.RecordsRestored.WithLabelValues("counts")); got < 6 {
		t.Fatalf("restored %v records, want the store rebuilt from its changelog", got)
	}
}

// A state directory the agent cannot create or write is a clear start-up error naming it
// (here a file stands where the directory should be, which fails for root too).
func TestUnwritableStateDirIsAClearError(t *testing.T) {
	brokers := testBroker(t, 1, "in", "out")
	cfg := testConfig(t, brokers, countScript, "")
	if err := os.WriteFile(cfg.StateDir, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = a.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "state.dir") || !strings.Contains(err.Error(), cfg.StateDir) {
		t.Fatalf("Run = %v, want an error naming state.dir and %s", err, cfg.StateDir)
	}
	if st := a.State(); st != StateNotRunning {
		t.Fatalf("state %s after a start-up failure", st)
	}
}

func fmtMap(m map[string]string) string {
	var b strings.Builder
	for _, k := range sortedKeys(m) {
		b.WriteString(k + "=" + m[k] + ";")
	}
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A changelog topic has Kafka Streams' settings for its store's kind (changelogTopics; the
// stores of a stream-stream join retain duplicates, so they are only deleted), the store's
// withLoggingEnabled(Map) settings over them; stores with logging disabled have none.
func TestChangelogTopicsTakeTheStoresTopicSettings(t *testing.T) {
	topics := changelogTopics("app", []pipeline.StoreSpec{
		{Name: "plain", Logged: true},
		{Name: "tuned", Logged: true, TopicConfig: map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "1000"}},
		{Name: "unlogged"},
		{Name: "win", Type: pipeline.TimestampedWindowStoreType, Logged: true, Retention: 5000},
		{Name: "ses", Type: pipeline.SessionStoreType, Logged: true, Retention: math.MaxInt64 - 10},
		{Name: "win-kept", Type: pipeline.WindowStoreType, Logged: true, Retention: 5000, TopicConfig: map[string]string{"retention.ms": "7"}},
		{Name: "join", Type: pipeline.WindowStoreType, Logged: true, Retention: 70, RetainDuplicates: true},
		{Name: "ver", Type: pipeline.VersionedKeyValueStoreType, Logged: true, HistoryRetention: 60000},
		{Name: "ver-lag", Type: pipeline.VersionedKeyValueStoreType, Logged: true, HistoryRetention: 60000, TopicConfig: map[string]string{"min.compaction.lag.ms": "9"}},
	}, 4, 3, 100*time.Millisecond)
	got := map[string]map[string]string{}
	for name, spec := range topics {
		if spec.Partitions != 4 || spec.ReplicationFactor != 3 {
			t.Errorf("%s: %+v", name, spec)
		}
		got[name] = map[string]string{}
		for k, v := range spec.Configs {
			got[name][k] = *v
		}
	}
	const create = "CreateTime"
	want := map[string]map[string]string{
		"app-plain-changelog":    {"cleanup.policy": "compact", "message.timestamp.type": create},
		"app-tuned-changelog":    {"cleanup.policy": "compact,delete", "retention.ms": "1000", "message.timestamp.type": create},
		"app-win-changelog":      {"cleanup.policy": "compact,delete", "retention.ms": "5100", "message.timestamp.type": create},
		"app-ses-changelog":      {"cleanup.policy": "compact,delete", "retention.ms": "9223372036854775807", "message.timestamp.type": create},
		"app-win-kept-changelog": {"cleanup.policy": "compact,delete", "retention.ms": "7", "message.timestamp.type": create},
		"app-join-changelog":     {"cleanup.policy": "delete", "retention.ms": "170", "message.timestamp.type": create},
		"app-ver-changelog":      {"cleanup.policy": "compact", "min.compaction.lag.ms": "86460000", "message.timestamp.type": create},
		"app-ver-lag-changelog":  {"cleanup.policy": "compact", "min.compaction.lag.ms": "9", "message.timestamp.type": create},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("changelog topics %v, want %v", got, want)
	}
}

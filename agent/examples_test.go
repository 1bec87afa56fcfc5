package agent

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/demo"
	"github.com/stoatflow/stoatflow/agent/schemaregistry"
	"github.com/stoatflow/stoatflow/metrics"
)

// exampleConfigs are the configs `make run EXAMPLE=name` runs: agent.toml for word count,
// scripts/name.toml for the others.
func exampleConfigs(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob("../scripts/*.toml")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{"wordcount": "../agent.toml"}
	for _, p := range paths {
		out[strings.TrimSuffix(filepath.Base(p), ".toml")] = p
	}
	return out
}

// loadExample loads an example's config as make run does, with free ports and the state
// in stateDir instead of the fixed ones.
func loadExample(t *testing.T, path, stateDir string) *config.Config {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.HTTPListen, cfg.EmbeddedListen, cfg.StateDir = "127.0.0.1:0", "127.0.0.1:0", stateDir
	cfg.NumStreamThreads = testThreads()
	if cfg.SchemaRegistry.Embedded {
		cfg.SchemaRegistry.EmbeddedListen = "127.0.0.1:0"
	}
	return cfg
}

// Every example runs with its demo feeder: records reach each of its output topics and are
// printed (make run shows them), twice
// in a row on the same state directory, and the second run warns of nothing but that the
// embedded broker (and registry) are for trying only: the broker forgot the changelogs, so
// the agent starts the stores empty and says so once.
func TestExamplesRunWithTheirDemoFeeders(t *testing.T) {
	examplesRunWithTheirDemoFeeders(t, nil)
}

// examplesRunWithTheirDemoFeeders runs every example as TestExamplesRunWithTheirDemoFeeders
// says, on its embedded broker with the agent's own feeder when broker is nil. Otherwise on
// the broker it gives (a subtest's), with topics of the test's own in copies of the scripts,
// and the feeder's records written by the test through the agent's feeder code: the
// second run then starts from the state and changelogs of the first, deletes nothing and
// warns of nothing.
func examplesRunWithTheirDemoFeeders(t *testing.T, broker func(t *testing.T) *brokerUnderTest) {
	examples := exampleConfigs(t)
	if len(examples) < 4 {
		t.Fatalf("examples: %v", examples)
	}
	for name, path := range examples {
		t.Run(name, func(t *testing.T) {
			stateDir := t.TempDir()
			var b *brokerUnderTest
			var feeder demo.Feeder
			if broker != nil {
				b = broker(t)
				path, feeder = exampleOn(t, b, path)
			}
			for run := 1; run <= 2; run++ {
				cfg := loadExample(t, path, stateDir)
				if b == nil && (cfg.EmbeddedDemo == "" || !cfg.Embedded) {
					t.Fatalf("%s: not an embedded demo config", path)
				}
				rt, tb, err := loadTopology(cfg, offlineSchemas(cfg), nil, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				rt.Close()
				m := metrics.New()
				ra := startAgentWith(t, cfg, m)
				stopFeeder := func() {}
				if b != nil {
					ctx, cancel := context.WithCancel(t.Context())
					fed := make(chan struct{})
					go func() { defer close(fed); ra.a.runDemoFeeder(ctx, b.brokers, feeder) }()
					stopFeeder = func() { cancel(); <-fed }
				}
				for _, topic := range tb.SinkTopics() {
					waitProduced(t, ra, m, topic, 1)
				}
				// What make run shows: the records the example prints (KStream#print).
				pollFor(t, 30*time.Second, "the example printed no record", func() bool {
					return strings.Contains(ra.out.String(), "]: ")
				})
				stopFeeder()
				if err := ra.stop(t); err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
				logs := ra.logs.String()
				for _, line := range strings.Split(logs, "\n") {
					if strings.Contains(line, "level=WARN") && !strings.Contains(line, "using the embedded in-process") ||
						strings.Contains(line, "level=ERROR") {
						t.Errorf("run %d: %s", run, line)
					}
				}
				want := 0
				if b == nil && run == 2 && len(tb.Stores()) > 0 {
					want = 1
				}
				if n := strings.Count(logs, "deleted the state of the last run"); n != want {
					t.Errorf("run %d: %d lines about deleting the last run's state, want %d:\n%s", run, n, want, logs)
				}
			}
		})
	}
}

// exampleOn copies the example of config path to b: its topics made on b, its scripts and
// their files copied with the topics' names put in, a config pointing at b with an
// application.id of the test's own and no demo feeder. It returns the copy's config and
// the example's feeder, writing to the topics on b. An embedded schema registry becomes a
// registry of the test, which outlives the agent's runs as a real one would: the embedded
// one forgets at every start the schema ids that the records and changelogs on b keep.
func exampleOn(t *testing.T, b *brokerUnderTest, path string) (string, demo.Feeder) {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rt, tb, err := loadTopology(cfg, offlineSchemas(cfg), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	topics := slices.Concat(tb.SourceTopics(), tb.SinkTopics())
	for _, g := range tb.GlobalStores() {
		topics = append(topics, g.Topic)
	}
	slices.Sort(topics)
	for _, topic := range slices.Compact(topics) {
		b.newTopic(t, topic, cfg.EmbeddedPartitions, nil)
	}
	feeder, err := demo.Lookup(cfg.EmbeddedDemo, topics)
	if err != nil {
		t.Fatal(err)
	}
	tick := feeder.Tick
	feeder.Tick = func(i int, now time.Time) []demo.Record {
		records := tick(i, now)
		for j := range records {
			records[j].Topic = b.topic(t, records[j].Topic)
		}
		return records
	}

	// The scripts' directory, copied whole: modules and schema files beside the scripts.
	from, dir := filepath.Dir(cfg.Scripts[0]), t.TempDir()
	err = filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		text, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".lua") {
			text = []byte(b.script(string(text)))
		}
		to := filepath.Join(dir, strings.TrimPrefix(p, from))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		return os.WriteFile(to, text, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	var scripts []string
	for _, s := range cfg.Scripts {
		rel, err := filepath.Rel(from, s)
		if err != nil {
			t.Fatal(err)
		}
		scripts = append(scripts, strconv.Quote(rel))
	}
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]string{
		"scripts":           "[" + strings.Join(scripts, ", ") + "]",
		"bootstrap.servers": strconv.Quote(strings.Join(b.brokers, ",")),
		"application.id":    strconv.Quote(b.name(t, cfg.ApplicationID)),
		"embedded.demo":     "",
	}
	if cfg.SchemaRegistry.Embedded {
		registry, err := schemaregistry.StartEmbedded("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { registry.Close() })
		set["schema.registry.url"] = strconv.Quote(registry.URL())
	}
	var lines []string
	for _, line := range strings.Split(string(text), "\n") {
		key, _, _ := strings.Cut(line, "=")
		if v, ok := set[strings.TrimSpace(key)]; ok {
			if v == "" {
				continue
			}
			line = strings.TrimSpace(key) + " = " + v
		}
		lines = append(lines, line)
	}
	copied := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(copied, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return copied, feeder
}

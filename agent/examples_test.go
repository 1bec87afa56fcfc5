package agent

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/agent/config"
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

// Every example runs with its demo feeder: records reach each of its output topics, twice
// in a row on the same state directory, and the second run warns of nothing but that the
// embedded broker (and registry) are for trying only: the broker forgot the changelogs, so
// the agent starts the stores empty and says so once.
func TestExamplesRunWithTheirDemoFeeders(t *testing.T) {
	examples := exampleConfigs(t)
	if len(examples) < 4 {
		t.Fatalf("examples: %v", examples)
	}
	for name, path := range examples {
		t.Run(name, func(t *testing.T) {
			stateDir := t.TempDir()
			for run := 1; run <= 2; run++ {
				cfg := loadExample(t, path, stateDir)
				if cfg.EmbeddedDemo == "" || !cfg.Embedded {
					t.Fatalf("%s: not an embedded demo config", path)
				}
				rt, b, err := loadTopology(cfg, offlineSchemas(cfg), nil, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				rt.Close()
				m := metrics.New()
				ra := startAgentWith(t, cfg, m)
				for _, topic := range b.SinkTopics() {
					waitProduced(t, ra, m, topic, 1)
				}
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
				if run == 2 && len(b.Stores()) > 0 {
					want = 1
				}
				if n := strings.Count(logs, "deleted the state of the last run"); n != want {
					t.Errorf("run %d: %d lines about deleting the last run's state, want %d:\n%s", run, n, want, logs)
				}
			}
		})
	}
}

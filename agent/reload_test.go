package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/metrics"
)

// mapScript maps every value v to prefix..":"..v; extra is spliced after mapValues.
func mapScript(prefix, extra string) string {
	return fmt.Sprintf(`
local s = require("stoat")
local b = s.builder()
b:stream("in"):mapValues(function(v) return %q .. ":" .. v end)%s:to("out")
return b
`, prefix, extra)
}

// reloadFixture is an agent started from files on disk, so a reload can re-read them.
type reloadFixture struct {
	*runningAgent
	dir, toml string
	m         *metrics.Metrics
	level     *slog.LevelVar
	log       *lockedBuffer
	base      string // http://host:port
}

func startReloadable(t *testing.T, brokers []string, script, extra string) *reloadFixture {
	t.Helper()
	return startReloadableAfter(t, brokers, script, extra, nil)
}

// startReloadableAfter is startReloadable with loaded run between loading the config and
// starting the agent.
func startReloadableAfter(t *testing.T, brokers []string, script, extra string, loaded func(*reloadFixture)) *reloadFixture {
	t.Helper()
	dir := t.TempDir()
	f := &reloadFixture{dir: dir, m: metrics.New(), log: &lockedBuffer{}, level: new(slog.LevelVar)}
	f.writeScript(t, script)
	f.toml = agentTOML(brokers, dir, "reload", extra)
	f.writeConfig(t, f.toml)
	cfg, err := config.Load(filepath.Join(dir, "agent.toml"))
	if err != nil {
		t.Fatal(err)
	}
	var w io.Writer = f.log
	if testing.Verbose() {
		w = io.MultiWriter(f.log, os.Stderr)
	}
	if loaded != nil {
		loaded(f)
	}
	f.level.Set(cfg.LogLevel)
	a, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: f.level})), Stdout: io.Discard, Metrics: f.m, LogLevel: f.level})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.runningAgent = &runningAgent{a: a, cancel: cancel, done: make(chan error, 1)}
	go func() { f.done <- a.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	if st, err := a.WaitState(wctx, StateRunning); err != nil {
		cancel()
		t.Fatalf("agent did not reach RUNNING (state %s): %v; run: %v", st, err, <-f.done)
	}
	addr, _ := a.HTTPAddr(wctx)
	f.base = "http://" + addr
	return f
}

func (f *reloadFixture) writeScript(t *testing.T, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, "p.lua"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f *reloadFixture) writeConfig(t *testing.T, toml string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, "agent.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f *reloadFixture) postReload(t *testing.T) int {
	t.Helper()
	resp, err := http.Post(f.base+"/-/reload", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitReloads polls until stoatflow_app_reloads_total{result} reaches n.
func (f *reloadFixture) waitReloads(t *testing.T, result string, n float64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for testutil.ToFloat64(f.m.Reloads.WithLabelValues(result)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("reloads{result=%q} did not reach %v; log:\n%s", result, n, f.logText())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (f *reloadFixture) reloads(result string) float64 {
	return testutil.ToFloat64(f.m.Reloads.WithLabelValues(result))
}

func (f *reloadFixture) logText() string {
	f.log.mu.Lock()
	defer f.log.mu.Unlock()
	return f.log.b.String()
}

func (f *reloadFixture) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := http.Get(f.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// readCommittedValues reads topic under read_committed until want records arrived, then
// drains what follows for a quiet moment so duplicates would show.
func readCommittedValues(t *testing.T, brokers []string, topic string, want int) map[int32][]string {
	t.Helper()
	ch := consumeAll(t, brokers, topic, readCommittedConfig())
	out := map[int32][]string{}
	n := 0
	deadline := time.After(60 * time.Second)
	for n < want {
		select {
		case m := <-ch:
			out[m.Partition] = append(out[m.Partition], string(m.Value))
			n++
		case <-deadline:
			t.Fatalf("read %d of %d records from %s", n, want, topic)
		}
	}
	for {
		select {
		case m := <-ch:
			out[m.Partition] = append(out[m.Partition], string(m.Value))
			continue
		case <-time.After(500 * time.Millisecond):
		}
		return out
	}
}

func TestReloadSwapsTheMappingAtACommitBarrierExactlyOnce(t *testing.T) {
	brokers := testBroker(t, 2, "in", "out")
	f := startReloadable(t, brokers, mapScript("A", ""), `processing.guarantee = "exactly_once_v2"
commit.interval.ms = 50`)
	defer f.stop(t)

	const batch = 300
	produce(t, brokers, "in", 0, batch, nil, 0)
	produce(t, brokers, "in", 1, batch, nil, batch)
	readCommittedValues(t, brokers, "out", batch)

	// The new script adds a filter: compatible (same sources and stores), and visible in
	// the topology description.
	f.writeScript(t, mapScript("B", `:filter(function(k, v) return true end)`))
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		produce(t, brokers, "in", 0, batch, nil, 2*batch)
		produce(t, brokers, "in", 1, batch, nil, 3*batch)
	}()
	if code := f.postReload(t); code != http.StatusAccepted {
		t.Fatalf("POST /-/reload: %d, want 202", code)
	}
	f.waitReloads(t, metrics.ResultSuccess, 1)
	<-produced
	if ks := f.get(t, "/topology/ks"); !strings.Contains(ks, "KSTREAM-FILTER") {
		t.Fatalf("/topology/ks does not show the reloaded topology:\n%s", ks)
	}
	if js := f.get(t, "/topology"); !strings.Contains(js, "KSTREAM-FILTER") {
		t.Fatalf("/topology does not show the reloaded topology:\n%s", js)
	}
	// Records produced after the reload took effect go through the new mapping only.
	produce(t, brokers, "in", 0, batch, nil, 4*batch)
	produce(t, brokers, "in", 1, batch, nil, 5*batch)

	got := readCommittedValues(t, brokers, "out", 6*batch)
	seen := map[string]int{}
	mapping := map[string]string{}
	for _, values := range got {
		for _, v := range values {
			prefix, in, ok := strings.Cut(v, ":")
			if !ok || (prefix != "A" && prefix != "B") {
				t.Fatalf("unexpected output %q", v)
			}
			seen[in]++
			mapping[in] = prefix
		}
	}
	for i := range 6 * batch {
		in := fmt.Sprintf("v%d", i)
		if seen[in] != 1 {
			t.Fatalf("input %s appears %d times in the output, want exactly once", in, seen[in])
		}
		if i >= 4*batch && mapping[in] != "B" {
			t.Fatalf("input %s, produced after the reload, went through the old mapping", in)
		}
	}
	// In each input partition's order the old mapping stops where the new one starts.
	for p := range 2 {
		sawB := false
		for round := range 3 {
			for i := range batch {
				in := fmt.Sprintf("v%d", (2*round+p)*batch+i)
				if mapping[in] == "A" && sawB {
					t.Fatalf("partition %d: %s went through the old mapping after a record went through the new one", p, in)
				}
				sawB = sawB || mapping[in] == "B"
			}
		}
	}
	if f.reloads(metrics.ResultFailure) != 0 {
		t.Fatalf("reload failures counted:\n%s", f.logText())
	}
}

func TestReloadRefusesIncompatibleOrBrokenChanges(t *testing.T) {
	brokers := testBroker(t, 1, "in", "in2", "out")
	f := startReloadable(t, brokers, mapScript("A", ""), "commit.interval.ms = 50")
	defer f.stop(t)
	before := f.get(t, "/topology/ks")

	// restart: the refusal says a restart applies the change (not for a script that does
	// not load, which a restart would not load either).
	cases := []struct {
		name, script, config, inLog string
		restart                     bool
	}{
		{name: "a new store", script: `
local s = require("stoat")
local b = s.builder()
b:addStateStore{name = "extra", type = "keyValue"}
b:stream("in"):mapValues(function(v) return "B:" .. v end):to("out")
return b
`, inLog: "store extra was added", restart: true},
		{name: "a new source topic", script: `
local s = require("stoat")
local b = s.builder()
b:stream("in"):mapValues(function(v) return "B:" .. v end):to("out")
b:stream("in2"):to("out")
return b
`, inLog: "source topics changed", restart: true},
		{name: "a syntax error", script: "local s = require(\"stoat\")\nlocal b = s.builder(\nreturn b\n", inLog: "p.lua:3: syntax error"},
		{name: "a changed config key", script: mapScript("B", ""),
			config: strings.Replace(f.toml, "commit.interval.ms = 50", "commit.interval.ms = 200", 1),
			inLog:  "config key streams.commit.interval.ms changed", restart: true},
	}
	for i, c := range cases {
		f.writeScript(t, c.script)
		if c.config != "" {
			f.writeConfig(t, c.config)
		}
		if code := f.postReload(t); code != http.StatusAccepted {
			t.Fatalf("%s: POST /-/reload: %d, want 202", c.name, code)
		}
		f.waitReloads(t, metrics.ResultFailure, float64(i+1))
		log := f.logText()
		if !strings.Contains(log, c.inLog) {
			t.Fatalf("%s: the log does not say %q:\n%s", c.name, c.inLog, log)
		}
		refusal := log[strings.LastIndex(log, "reload refused"):]
		if strings.Contains(refusal, "a restart applies the change") != c.restart {
			t.Fatalf("%s: the refusal says a restart applies it: %v, want %v:\n%s", c.name, !c.restart, c.restart, refusal)
		}
		if c.config != "" {
			f.writeConfig(t, f.toml)
		}
	}
	if f.reloads(metrics.ResultSuccess) != 0 {
		t.Fatal("an incompatible reload counted as a success")
	}
	if after := f.get(t, "/topology/ks"); after != before {
		t.Fatalf("the topology changed after refused reloads:\n%s", after)
	}
	// The old topology keeps running.
	produce(t, brokers, "in", 0, 10, nil, 0)
	for _, m := range readAll(t, brokers, "out", 10) {
		if !strings.HasPrefix(string(m.Value), "A:") {
			t.Fatalf("output %q did not go through the running topology", m.Value)
		}
	}
}

// A reload compares the file with the config the agent runs with, not with the file as it
// was when the agent started running.
func TestReloadComparesWithTheConfigTheAgentRuns(t *testing.T) {
	brokers := testBroker(t, 1, "in", "out")
	var changed string
	f := startReloadableAfter(t, brokers, mapScript("A", ""), "commit.interval.ms = 50", func(f *reloadFixture) {
		changed = strings.Replace(f.toml, "commit.interval.ms = 50", "commit.interval.ms = 200", 1)
		f.writeConfig(t, changed)
	})
	defer f.stop(t)
	f.writeConfig(t, f.toml)
	f.writeScript(t, mapScript("B", ""))
	if code := f.postReload(t); code != http.StatusAccepted {
		t.Fatalf("POST /-/reload: %d, want 202", code)
	}
	f.waitReloads(t, metrics.ResultSuccess, 1)
	f.writeConfig(t, changed)
	if code := f.postReload(t); code != http.StatusAccepted {
		t.Fatalf("POST /-/reload: %d, want 202", code)
	}
	f.waitReloads(t, metrics.ResultFailure, 1)
	if log := f.logText(); !strings.Contains(log, "config key streams.commit.interval.ms changed") {
		t.Fatalf("the log does not name the changed key:\n%s", log)
	}
}

func TestValidateAgainstARunningAgent(t *testing.T) {
	brokers := testBroker(t, 1, "in", "out")
	f := startReloadable(t, brokers, mapScript("A", ""), "commit.interval.ms = 50")
	defer f.stop(t)
	check := func(script string) error {
		f.writeScript(t, script)
		cfg, err := config.Load(filepath.Join(f.dir, "agent.toml"))
		if err != nil {
			t.Fatal(err)
		}
		return ReloadCompatibleWith(context.Background(), cfg, f.base)
	}
	if err := check(mapScript("B", "")); err != nil {
		t.Fatalf("a changed mapping: %v, want compatible", err)
	}
	err := check(`
local s = require("stoat")
local b = s.builder()
b:addStateStore{name = "extra", type = "keyValue"}
b:stream("in"):to("out")
return b
`)
	if err == nil || !strings.Contains(err.Error(), "store extra was added") {
		t.Fatalf("a new store: %v, want refused", err)
	}
	// A changed config key is refused as the agent refuses it; the log level may change.
	f.writeScript(t, mapScript("A", ""))
	f.writeConfig(t, strings.Replace(f.toml, "[agent]", "[agent]\nlog.level = \"debug\"", 1))
	if err := check(mapScript("A", "")); err != nil {
		t.Fatalf("a changed log level: %v, want compatible", err)
	}
	f.writeConfig(t, strings.Replace(f.toml, "commit.interval.ms = 50", "commit.interval.ms = 70", 1))
	if err := check(mapScript("A", "")); err == nil || !strings.Contains(err.Error(), "config key streams.commit.interval.ms changed") {
		t.Fatalf("a changed key: %v, want refused", err)
	}
}

func TestReloadWhilePendingAnswers409(t *testing.T) {
	brokers := testBroker(t, 1, "in", "out")
	// No commit barrier comes within the test, so the first reload stays pending.
	f := startReloadable(t, brokers, mapScript("A", ""), "commit.interval.ms = 600000")
	f.writeScript(t, mapScript("B", ""))
	if code := f.postReload(t); code != http.StatusAccepted {
		t.Fatalf("first POST /-/reload: %d, want 202", code)
	}
	if code := f.postReload(t); code != http.StatusConflict {
		t.Fatalf("second POST /-/reload: %d, want 409", code)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(f.logText(), "takes over at the next commit barrier") {
		if time.Now().After(deadline) {
			t.Fatalf("the reload was not staged; log:\n%s", f.logText())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := f.stop(t); err != nil {
		t.Fatal(err)
	}
	if f.reloads(metrics.ResultSuccess) != 0 || f.reloads(metrics.ResultFailure) != 1 {
		t.Fatalf("a reload dropped at shutdown: success %v failure %v, want 0 and 1",
			f.reloads(metrics.ResultSuccess), f.reloads(metrics.ResultFailure))
	}
}

func TestReloadAppliesTheLogLevel(t *testing.T) {
	brokers := testBroker(t, 1, "in", "out")
	f := startReloadable(t, brokers, mapScript("A", ""), "commit.interval.ms = 50")
	defer f.stop(t)
	f.writeConfig(t, strings.Replace(f.toml, "[agent]", "[agent]\nlog.level = \"debug\"", 1))
	if code := f.postReload(t); code != http.StatusAccepted {
		t.Fatalf("POST /-/reload: %d, want 202", code)
	}
	f.waitReloads(t, metrics.ResultSuccess, 1)
	if got := f.level.Level(); got != slog.LevelDebug {
		t.Fatalf("log level after the reload: %v, want DEBUG", got)
	}
}

func TestNewLoggerFollowsTheConfigUnlessTheFlagFixesTheLevel(t *testing.T) {
	cfg := config.Default()
	if _, level, err := NewLogger(io.Discard, cfg, "", ""); err != nil || level == nil {
		t.Fatalf("without --log.level: level %v, err %v; want a level that follows the config", level, err)
	}
	if _, level, err := NewLogger(io.Discard, cfg, "warn", ""); err != nil || level != nil {
		t.Fatalf("with --log.level: level %v, err %v; want none", level, err)
	}
}

// At debug level a reload logs what it changes: the scripts whose contents differ and the
// lines of the topology description that go and come.
func TestReloadDebugLogsTheChanges(t *testing.T) {
	brokers := testBroker(t, 1, "in", "out")
	f := startReloadable(t, brokers, mapScript("A", ""), "commit.interval.ms = 50")
	defer f.stop(t)
	f.level.Set(slog.LevelDebug)
	f.writeScript(t, mapScript("B", `:filter(function() return true end)`))
	if code := f.postReload(t); code != http.StatusAccepted {
		t.Fatalf("POST /-/reload: %d, want 202", code)
	}
	f.waitReloads(t, metrics.ResultSuccess, 1)
	logs := f.logText()
	for _, want := range []string{
		`msg="reload: what changes" "scripts changed"=[` + filepath.Join(f.dir, "p.lua") + `]`,
		`"topology lines removed"="[--> KSTREAM-SINK-0000000002 Sink: KSTREAM-SINK-0000000002 (topic: out)]"`,
		`"topology lines added"="[--> KSTREAM-FILTER-0000000002 Processor: KSTREAM-FILTER-0000000002 (stores: []) --> KSTREAM-SINK-0000000003 Sink: KSTREAM-SINK-0000000003 (topic: out) <-- KSTREAM-FILTER-0000000002]"`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %s:\n%s", want, logs)
		}
	}
}

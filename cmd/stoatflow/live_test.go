package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/agent"
	"github.com/stoatflow/stoatflow/agent/config"
)

// startWordCount runs the word count of make run (embedded broker, demo feeder) with a
// bearer token and returns its HTTP address.
func startWordCount(t *testing.T, token string) string {
	t.Helper()
	dir := t.TempDir()
	script, err := filepath.Abs("../../scripts/wordcount.lua")
	if err != nil {
		t.Fatal(err)
	}
	toml := fmt.Sprintf(`
[agent]
scripts = [%q]
http.listen = "127.0.0.1:0"
http.token = %q
embedded.listen = "127.0.0.1:0"
embedded.partitions = 3
embedded.demo = "lines"

[streams]
application.id = "wordcount"
bootstrap.servers = "embedded"
commit.interval.ms = 100
state.dir = %q
`, script, token, filepath.Join(dir, "state"))
	return startAgentTOML(t, dir, toml, agent.Options{Logger: slog.New(slog.DiscardHandler), Stdout: io.Discard})
}

// startAgentTOML writes toml as dir/agent.toml, runs an agent with it until the test ends and
// returns its HTTP address once it is RUNNING.
func startAgentTOML(t *testing.T, dir, toml string, opts agent.Options) string {
	t.Helper()
	path := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	})
	wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
	defer wcancel()
	if _, err := a.WaitState(wctx, agent.StateRunning); err != nil {
		t.Fatal(err)
	}
	addr, err := a.HTTPAddr(wctx)
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// top and tap against a running word count, through its token; without the token the
// agent refuses the tap.
func TestTopAndTapOfARunningAgent(t *testing.T) {
	addr := startWordCount(t, "s3cret")

	code, out, errOut := runCLI("top", "-addr", addr, "-token", "s3cret", "-n", "2", "-interval", "700ms")
	if code != 0 {
		t.Fatalf("top: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"StoatFlow RUNNING", "watermark ", "consumer lag", "commits ", "NODE", "RECORDS/S",
		"KSTREAM-SOURCE-0000000000", "KSTREAM-FLATMAPVALUES-0000000001", "KSTREAM-SINK-0000000009",
		"TASK", "AGENT", "LAG", "THREAD", "STREAM TIME", "\n0_0   this agent", "\n1_0   this agent", "tasks on this agent (classic group)"} {
		if !strings.Contains(out, want) {
			t.Errorf("top lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "StoatFlow RUNNING"); n != 2 {
		t.Errorf("top -n 2 printed %d frames:\n%s", n, out)
	}

	code, out, errOut = runCLI("tap", "KSTREAM-FLATMAPVALUES-0000000001", "-n", "3", "-addr", addr, "-token", "s3cret")
	if code != 0 {
		t.Fatalf("tap: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("tap -n 3 printed %d lines:\n%s", len(lines), out)
	}
	for _, l := range lines {
		// The demo's lines are split into lowercase words, under the line's key.
		if !strings.Contains(l, ` key="line-`) || !strings.Contains(l, " value=\"") || !strings.Contains(l, " from=text-lines-") {
			t.Errorf("tap line %q", l)
		}
	}

	code, out, errOut = runCLI("tap", "-format", "json", "-n", "2", "-addr", addr, "-token", "s3cret", "KTABLE-TOSTREAM-0000000007")
	if code != 0 {
		t.Fatalf("tap -format json: exit %d: %s", code, errOut)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct {
			Node  string
			Key   string
			Value int64
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Node != "KTABLE-TOSTREAM-0000000007" || ev.Key == "" || ev.Value < 1 {
			t.Errorf("json line %q: %+v, %v", l, ev, err)
		}
	}

	for _, token := range []string{"", "wrong"} {
		code, _, errOut = runCLI("tap", "KSTREAM-SOURCE-0000000000", "-n", "1", "-addr", addr, "-token", token)
		if code != 1 || !strings.Contains(errOut, "unauthorized") {
			t.Errorf("tap with token %q: exit %d: %s", token, code, errOut)
		}
	}
	resp, err := http.Get("http://" + addr + "/v1/tap/KSTREAM-SOURCE-0000000000")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/tap without the token: %s", resp.Status)
	}
	code, _, errOut = runCLI("tap", "NOPE", "-n", "1", "-addr", addr, "-token", "s3cret")
	if code != 1 || !strings.Contains(errOut, `no node named "NOPE"`) || strings.Contains(errOut, "did you mean") {
		t.Errorf("tap of an unknown node: exit %d: %s", code, errOut)
	}
	code, _, errOut = runCLI("tap", "KSTREAM-SORCE-0000000000", "-n", "1", "-addr", addr, "-token", "s3cret")
	if code != 1 || !strings.Contains(errOut, `no node named "KSTREAM-SORCE-0000000000" in the running topology (GET /topology lists them); did you mean "KSTREAM-SOURCE-0000000000"?`) {
		t.Errorf("tap of a misspelled node: exit %d: %s", code, errOut)
	}
}

func TestDescribeDrawsTheTopology(t *testing.T) {
	for format, want := range map[string]string{
		"dot":     `"topic:text-lines" -> "KSTREAM-SOURCE-0000000000";`,
		"mermaid": "flowchart TB\n",
		"text":    "Topologies:\n   Sub-topology: 0\n",
	} {
		code, out, errOut := runCLI("describe", "-c", "../../agent.toml", "-format", format)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("describe -format %s: exit %d, err %q, out:\n%s", format, code, errOut, out)
		}
	}
	if code, _, errOut := runCLI("describe", "-c", "../../agent.toml", "-format", "svg"); code != 2 || !strings.Contains(errOut, "not one of text, dot, mermaid") {
		t.Errorf("describe -format svg: exit %d, %q", code, errOut)
	}
}

package main

import (
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/agent"
)

// listenIP is an address of this machine other than loopback, where there is one: the
// agent's HTTP guards must not get in the way of a client that reaches it over the network.
func listenIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Log("no address but loopback: the agent listens on 127.0.0.1")
	return "127.0.0.1"
}

// TestQueryCommandAgainstARunningAgent runs the word count on the embedded broker and
// asks it with stoatflow query and validate --against, the way a person would.
func TestQueryCommandAgainstARunningAgent(t *testing.T) {
	dir := t.TempDir()
	script, err := filepath.Abs("../../scripts/wordcount.lua")
	if err != nil {
		t.Fatal(err)
	}
	toml := fmt.Sprintf(`
[agent]
scripts = [%q]
http.listen = "%s:0"
http.token = "t0ken"
embedded.partitions = 3
embedded.demo = "lines"
[streams]
application.id = "wordcount"
bootstrap.servers = "embedded"
processing.guarantee = "exactly_once_v2"
state.dir = %q
`, script, listenIP(t), filepath.Join(dir, "state"))
	addr := startAgentTOML(t, dir, toml, agent.Options{Stdout: io.Discard})
	query := func(args ...string) string {
		t.Helper()
		code, out, errOut := runCLI(append([]string{"query", "-addr", addr, "-token", "t0ken"}, args...)...)
		if code != 0 {
			t.Fatalf("stoatflow query %v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	if out := query("stores"); !strings.Contains(out, "word-counts") {
		t.Fatalf("stores:\n%s", out)
	}
	// The demo feeds a line every 500 ms: poll until a word is counted.
	for deadline := time.Now().Add(30 * time.Second); ; {
		if out := query("count", "word-counts"); strings.TrimSpace(out) != "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no word counted in 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out := query("range", "word-counts", "-limit", "2"); !strings.HasPrefix(out, "KEY") {
		t.Fatalf("range:\n%s", out)
	}
	if out := query("iqv2", `{"store":"word-counts","partitions":[0],"query":{"type":"RangeQuery"}}`); !strings.Contains(out, `"success": true`) {
		t.Fatalf("iqv2:\n%s", out)
	}
	// A store of the wrong type for the command is named with the command to use.
	code, _, errOut := runCLI("query", "-addr", addr, "-token", "t0ken", "windows", "word-counts", "the")
	if want := "stoatflow query: store word-counts is a timestampedKeyValue store: windows reads window and session stores; " +
		"read it with stoatflow query get word-counts KEY (or range word-counts) (wrong_store_type, HTTP 400)"; code != 1 || !strings.Contains(errOut, want) {
		t.Fatalf("windows of a key-value store: exit %d, %s\nwant %s", code, errOut, want)
	}
	code, out, errOut := runCLI("validate", "-c", filepath.Join(dir, "agent.toml"), "--against", "http://"+addr)
	if code != 0 || !strings.Contains(out, "reload-compatible") {
		t.Fatalf("validate --against: exit %d, out %q, err %q", code, out, errOut)
	}
}

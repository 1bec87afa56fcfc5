package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/luart"
)

// syncBuffer is a strings.Builder that a command's goroutines and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls out until it holds want n times.
func waitFor(t *testing.T, out *syncBuffer, want string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(out.String(), want) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%q did not appear %d times in:\n%s", want, n, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stoatflow test -w runs the tests again after a change, and exits with the last run's code.
func TestTestWatchRerunsOnChange(t *testing.T) {
	dir := writeTestDir(t, "local t = require(\"stoat.test\")\nt.test(\"ok\", function() t.assertEquals(1, 1) end)\n")
	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() { code <- watchTests(ctx, []string{dir}, luart.TestOptions{Out: out}, out, 10*time.Millisecond) }()
	waitFor(t, out, "watching "+dir, 1)
	if !strings.Contains(out.String(), "1 passed, 0 failed") {
		t.Fatalf("first run:\n%s", out)
	}
	test := filepath.Join(dir, "p_test.lua")
	if err := os.WriteFile(test+".new", []byte("local t = require(\"stoat.test\")\nt.test(\"bad\", function() t.assertEquals(1, 2) end)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(test+".new", test); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "0 passed, 1 failed", 1)
	if !strings.Contains(out.String(), test+" changed; running the tests again") {
		t.Fatalf("no change line:\n%s", out)
	}
	cancel()
	if c := <-code; c != 1 {
		t.Fatalf("exit %d, want 1 (the last run failed)", c)
	}
}

// stoatflow run --watch reloads the agent when a script changes, and a change the agent
// cannot take is refused with its reason while the old topology keeps running.
func TestRunWatchReloadsOnChange(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "p.lua")
	// Written whole and renamed over the script, as editors save, so that no poll sees it
	// half written.
	write := func(body string) {
		t.Helper()
		tmp := script + ".new"
		if err := os.WriteFile(tmp, []byte("local b = require(\"stoat\").builder()\n"+body+"\nreturn b\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, script); err != nil {
			t.Fatal(err)
		}
	}
	write(`b:stream("in"):mapValues(function(v) return v end):to("out")`)
	toml := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(toml, []byte(`[agent]
scripts = ["p.lua"]
http.listen = "127.0.0.1:0"
embedded.listen = "127.0.0.1:0"
[streams]
application.id = "watch"
bootstrap.servers = "embedded"
commit.interval.ms = 50
state.dir = "state"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() {
		code <- runAgent(ctx, []string{"-c", toml, "--watch"}, &syncBuffer{}, logs, 10*time.Millisecond)
	}()
	defer func() {
		cancel()
		if c := <-code; c != 0 {
			t.Errorf("exit %d, log:\n%s", c, logs)
		}
	}()
	waitFor(t, logs, "StoatFlow is running", 1)
	write(`b:stream("in"):mapValues(function(v) return v .. "!" end):to("out")`)
	waitFor(t, logs, "reload: the new topology is running", 1)
	write(`b:stream("other"):to("out")`)
	waitFor(t, logs, "reload refused; the running topology keeps running", 1)
	if !strings.Contains(logs.String(), "source topics changed from [in] to [other]") {
		t.Fatalf("no reason in the log:\n%s", logs)
	}
}

// A script saved with a typo inside a callback reloads (no check runs a callback), fails on
// the next record and is rolled back, and the --watch loop goes on: the fixed script
// reloads, and the agent ends cleanly.
func TestRunWatchSurvivesATypoInACallback(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "p.lua")
	write := func(body string) {
		t.Helper()
		tmp := script + ".new"
		if err := os.WriteFile(tmp, []byte("local b = require(\"stoat\").builder()\n"+body+"\nreturn b\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, script); err != nil {
			t.Fatal(err)
		}
	}
	write(`b:stream("text-lines"):mapValues(function(v) return v:lower() end):to("out")`)
	toml := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(toml, []byte(`[agent]
scripts = ["p.lua"]
http.listen = "127.0.0.1:0"
embedded.listen = "127.0.0.1:0"
embedded.demo = "lines"
[streams]
application.id = "watch-typo"
bootstrap.servers = "embedded"
commit.interval.ms = 50
state.dir = "state"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() {
		code <- runAgent(ctx, []string{"-c", toml, "--watch"}, &syncBuffer{}, logs, 10*time.Millisecond)
	}()
	defer func() {
		cancel()
		if c := <-code; c != 0 {
			t.Errorf("exit %d, log:\n%s", c, logs)
		}
	}()
	waitFor(t, logs, "StoatFlow is running", 1)
	write(`b:stream("text-lines"):mapValues(function(v) return v:lowr() end):to("out")`)
	waitFor(t, logs, "reload: the new topology is running", 1)
	waitFor(t, logs, "reload: the new topology failed on probation; rolling back", 1)
	if !strings.Contains(logs.String(), `string has no method \"lowr\"; did you mean \"lower\"?`) {
		t.Fatalf("the rollback does not name the typo:\n%s", logs)
	}
	write(`b:stream("text-lines"):mapValues(function(v) return v:upper() end):to("out")`)
	waitFor(t, logs, "reload: the new topology is running", 2)
}

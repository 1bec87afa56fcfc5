package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/agent/config"
)

func runCLI(args ...string) (int, string, string) {
	var out, errb strings.Builder
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestValidateDefaultConfig(t *testing.T) {
	code, out, errOut := runCLI("validate", "-c", "../../agent.toml")
	if code != 0 || !strings.Contains(out, "OK") {
		t.Fatalf("exit %d, out %q, err %q", code, out, errOut)
	}
}

func TestValidateReportsScriptErrorWithLine(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.lua"), []byte("local s = require(\"stoat\")\nlocal b = s.builder()\nb:stream(\"in\"):fliter(function() end)\nreturn b\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "agent.toml"), []byte(`
[agent]
scripts = ["bad.lua"]
[streams]
application.id = "x"
bootstrap.servers = "embedded"
`), 0o644)
	code, _, errOut := runCLI("validate", "-c", filepath.Join(dir, "agent.toml"))
	if code != 1 || !strings.Contains(errOut, "bad.lua:3") {
		t.Fatalf("exit %d, err %q", code, errOut)
	}
}

func TestValidateReportsEveryScriptAndStrictWarnings(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.lua"), []byte("local b = require(\"stoat\").builder()\nb:stream(\"in\"):nope()\nreturn b\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.lua"), []byte("local b = require(\"stoat\").builder()\n\nb:stream(\"in2\", {valueSerde = \"yaml\"})\nreturn b\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "ok.lua"), []byte("local b = require(\"stoat\").builder()\nb:stream(\"in3\"):to(\"out\")\nreturn b\n"), 0o644)
	cfg := `
[agent]
scripts = [%s]
[streams]
application.id = "x"
bootstrap.servers = "embedded"
max.warmup.replicas = 1
`
	os.WriteFile(filepath.Join(dir, "bad.toml"), []byte(fmt.Sprintf(cfg, `"a.lua", "b.lua"`)), 0o644)
	code, _, errOut := runCLI("validate", "-c", filepath.Join(dir, "bad.toml"))
	if code != 1 || !strings.Contains(errOut, "a.lua:2") || !strings.Contains(errOut, "b.lua:3") {
		t.Fatalf("exit %d, err %q", code, errOut)
	}
	os.WriteFile(filepath.Join(dir, "ok.toml"), []byte(fmt.Sprintf(cfg, `"ok.lua"`)), 0o644)
	warning := "warning: " + filepath.Join(dir, "ok.toml") + ":7: streams.max.warmup.replicas: ignored: "
	if code, _, errOut := runCLI("validate", "-c", filepath.Join(dir, "ok.toml")); code != 0 || !strings.HasPrefix(errOut, warning) {
		t.Fatalf("without --strict: exit %d, err %q", code, errOut)
	}
	if code, _, errOut := runCLI("validate", "--strict", "-c", filepath.Join(dir, "ok.toml")); code != 1 || !strings.Contains(errOut, "--strict") {
		t.Fatalf("with --strict: exit %d, err %q", code, errOut)
	}
	if code, _, _ := runCLI("validate", "--bogus"); code != 2 {
		t.Fatalf("bad flag: exit %d, want 2", code)
	}
}

func TestCommandsNotThereYetExitTwo(t *testing.T) {
	if code, _, _ := runCLI("frobnicate"); code != 2 {
		t.Fatalf("unknown command exit %d", code)
	}
}

// A misspelled command names the one meant.
func TestUnknownCommandSuggestsTheClosest(t *testing.T) {
	for _, args := range [][]string{{"rn"}, {"help", "rn"}} {
		if code, _, errOut := runCLI(args...); code != 2 || !strings.Contains(errOut, `unknown command "rn"; did you mean "run"?`) {
			t.Errorf("%v: exit %d, %s", args, code, errOut)
		}
	}
	if _, _, errOut := runCLI("frobnicate"); strings.Contains(errOut, "did you mean") {
		t.Errorf("a suggestion for nothing close: %s", errOut)
	}
}

func TestResetDeletesStateDir(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state", "app")
	os.MkdirAll(state, 0o755)
	os.WriteFile(filepath.Join(state, "x"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "p.lua"), []byte("return 1"), 0o644)
	os.WriteFile(filepath.Join(dir, "agent.toml"), []byte(`
[agent]
scripts = ["p.lua"]
[streams]
application.id = "app"
bootstrap.servers = "embedded"
state.dir = "state"
`), 0o644)
	code, _, errOut := runCLI("reset", "-c", filepath.Join(dir, "agent.toml"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Fatalf("state dir still there: %v", err)
	}
}

func TestDescribeDefaultConfig(t *testing.T) {
	code, out, errOut := runCLI("describe", "-c", "../../agent.toml")
	if code != 0 || !strings.HasPrefix(out, "Topologies:\n   Sub-topology: 0\n    Source: KSTREAM-SOURCE-0000000000 (topics: [text-lines])\n") {
		t.Fatalf("exit %d, out %q, err %q", code, out, errOut)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		code, out, errOut := runCLI(args...)
		if code != 0 || !strings.HasPrefix(out, "stoatflow ") || errOut != "" {
			t.Fatalf("%v: exit %d out %q err %q", args, code, out, errOut)
		}
	}
}

// --help lists the sub-commands, not run's flags and every config key.
func TestHelpListsCommands(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"-help"}, {"help"}} {
		code, out, errOut := runCLI(args...)
		if code != 0 || errOut != "" {
			t.Fatalf("%v: exit %d err %q", args, code, errOut)
		}
		for _, c := range commands {
			if !strings.Contains(out, "stoatflow "+c.name+" ") {
				t.Errorf("%v: %s missing from\n%s", args, c.name, out)
			}
		}
		if strings.Contains(out, "commit.interval.ms") || strings.Count(out, "\n") > 25 {
			t.Errorf("%v: more than the commands:\n%s", args, out)
		}
	}
}

func TestHelpCommand(t *testing.T) {
	code, out, errOut := runCLI("help", "run")
	if code != 0 || errOut != "" || !strings.Contains(out, "Usage: stoatflow run") || !strings.Contains(out, "-log.level") {
		t.Fatalf("help run: exit %d out %q err %q", code, out, errOut)
	}
	code, out, _ = runCLI("help", "validate")
	if code != 0 || !strings.Contains(out, "-against") {
		t.Fatalf("help validate: exit %d out %q", code, out)
	}
	code, out, _ = runCLI("help", "test")
	if code != 0 || !strings.Contains(out, "-run") {
		t.Fatalf("help test: exit %d out %q", code, out)
	}
	code, out, _ = runCLI("help", "query")
	if code != 0 || !strings.Contains(out, "metadata STORE KEY") || !strings.Contains(out, "metadata STORE  ") {
		t.Fatalf("help query: exit %d out %q", code, out)
	}
	code, out, _ = runCLI("help", "config")
	if code != 0 || !strings.Contains(out, "commit.interval.ms") {
		t.Fatalf("help config: exit %d out %q", code, out)
	}
	if code, _, errOut := runCLI("help", "frobnicate"); code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Fatalf("help of an unknown command: exit %d err %q", code, errOut)
	}
	// run -h stays short: its flags and where the config keys are.
	code, _, errOut = runCLI("run", "-h")
	if code != 0 || strings.Contains(errOut, "commit.interval.ms") || !strings.Contains(errOut, "stoatflow help config") {
		t.Fatalf("run -h: exit %d err %q", code, errOut)
	}
}

// The configs of make run's examples validate, and a demo feeder of another example is
// refused by name.
func TestValidateExampleConfigs(t *testing.T) {
	paths, _ := filepath.Glob("../../scripts/*.toml")
	if len(paths) == 0 {
		t.Fatal("no example config in scripts/")
	}
	for _, p := range paths {
		if code, out, errOut := runCLI("validate", "-c", p); code != 0 {
			t.Errorf("%s: exit %d, out %q, err %q", p, code, out, errOut)
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "p.lua"), []byte("local b = require(\"stoat\").builder()\nb:stream(\"in\"):to(\"out\")\nreturn b\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "agent.toml"), []byte("[agent]\nscripts = [\"p.lua\"]\nembedded.demo = \"orders\"\n[streams]\napplication.id = \"x\"\nbootstrap.servers = \"embedded\"\n"), 0o644)
	code, _, errOut := runCLI("validate", "-c", filepath.Join(dir, "agent.toml"))
	if code != 1 || !strings.Contains(errOut, `agent.embedded.demo: the demo feeder "orders" writes customers, products, orders, which the topology does not read (it reads in)`) {
		t.Fatalf("exit %d, err %q", code, errOut)
	}
}

// validate warns of calls of what the sandbox lacks inside callbacks, and --strict fails on it.
func TestValidateWarnsOfUnavailableCalls(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "p.lua"), []byte("local b = require(\"stoat\").builder()\nb:stream(\"in\"):mapValues(function(v)\n  return io.open(v)\nend):to(\"out\")\nreturn b\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "agent.toml"), []byte("[agent]\nscripts = [\"p.lua\"]\n[streams]\napplication.id = \"x\"\nbootstrap.servers = \"embedded\"\n"), 0o644)
	code, _, errOut := runCLI("validate", "-c", filepath.Join(dir, "agent.toml"))
	if code != 0 || !strings.Contains(errOut, "warning: ") || !strings.Contains(errOut, "p.lua:3: io.open is not available") {
		t.Fatalf("exit %d, err %q", code, errOut)
	}
	if code, _, _ := runCLI("validate", "--strict", "-c", filepath.Join(dir, "agent.toml")); code != 1 {
		t.Fatalf("--strict: exit %d, want 1", code)
	}
}

// A typo inside a callback passes validate, which runs no callback; validate --tests runs
// the script's tests, which catch it, naming the method and the closest one. A script
// without tests is a warning (and so fails --strict).
func TestValidateTestsCatchesATypoInACallback(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"shout.lua", "shout_test.lua", "shout.toml"} {
		b, err := os.ReadFile(filepath.Join("../../scripts", name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "shout.lua" {
			if b = bytes.Replace(b, []byte("line:lower()"), []byte("line:lowr()"), 1); !bytes.Contains(b, []byte("lowr")) {
				t.Fatal("scripts/shout.lua no longer calls line:lower()")
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(dir, "shout.toml")
	if code, out, errOut := runCLI("validate", "--strict", "-c", config); code != 0 {
		t.Fatalf("validate: exit %d, %s%s", code, out, errOut)
	}
	code, out, errOut := runCLI("validate", "--tests", "-c", config)
	if code != 1 || !strings.Contains(out, `shout.lua:10: string has no method "lowr"; did you mean "lower"?`) ||
		!strings.Contains(errOut, "the scripts' tests failed") {
		t.Fatalf("validate --tests: exit %d\nout:\n%s\nerr:\n%s", code, out, errOut)
	}
	if err := os.Remove(filepath.Join(dir, "shout_test.lua")); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI("validate", "--tests", "--strict", "-c", config)
	if code != 1 || !strings.Contains(errOut, "shout.lua: no tests (NAME_test.lua beside it) for --tests to run") {
		t.Fatalf("validate --tests of an untested script: exit %d, %s", code, errOut)
	}
	if code, out, errOut := runCLI("validate", "--tests", "-c", "../../agent.toml"); code != 0 || !strings.Contains(out, "passed, 0 failed") {
		t.Fatalf("validate --tests of agent.toml: exit %d, %s%s", code, out, errOut)
	}
}

// validate --against listen talks to the agent the config runs, on loopback for a wildcard
// listener and over https with TLS set.
func TestListenURL(t *testing.T) {
	for _, c := range []struct {
		listen, cert, want string
	}{
		{"127.0.0.1:9464", "", "http://127.0.0.1:9464"},
		{":9464", "", "http://127.0.0.1:9464"},
		{"0.0.0.0:9464", "c.pem", "https://127.0.0.1:9464"},
		{"[::]:9464", "", "http://[::1]:9464"},
		{"stoat-1.example:9464", "", "http://stoat-1.example:9464"},
	} {
		cfg := config.Default()
		cfg.HTTPListen, cfg.HTTPTLSCert = c.listen, c.cert
		if got := listenURL(cfg); got != c.want {
			t.Errorf("%s: %s, want %s", c.listen, got, c.want)
		}
	}
}

// The unit's reload checks the change against the running agent before it sends SIGHUP, so
// systemctl reload fails when the agent would refuse it.
func TestUnitReloadChecksTheRunningAgent(t *testing.T) {
	data, err := os.ReadFile("../../systemd/stoatflow.service")
	if err != nil {
		t.Fatal(err)
	}
	var reloads []string
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "ExecReload="); ok {
			reloads = append(reloads, v)
		}
	}
	if len(reloads) != 2 || reloads[1] != "/bin/kill -HUP $MAINPID" {
		t.Fatalf("ExecReload lines: %q", reloads)
	}
	args := strings.Fields(reloads[0])
	if args[0] != "/usr/local/bin/stoatflow" || args[1] != "validate" {
		t.Fatalf("first ExecReload: %q", reloads[0])
	}
	f, _, err := parseFlags("validate", args[2:], io.Discard, false)
	if err != nil || f.against != "listen" || f.config != "/etc/stoatflow/agent.toml" {
		t.Fatalf("first ExecReload %q: flags %+v, err %v", reloads[0], f, err)
	}
}

// A value Kafka Streams overrides (bootstrap.resolve.timeout.ms > 0) and a deprecated key
// are warnings in the running agent's log, an ignored key an info line.
func TestRunLogsOverriddenValuesAndDeprecatedKeysAsWarnings(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.lua"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte("[agent]\nscripts = [\"p.lua\"]\n[streams]\napplication.id = \"a\"\nbootstrap.servers = \"embedded\"\nbootstrap.resolve.timeout.ms = 5000\nmax.warmup.replicas = 1\ncache.max.bytes.buffering = 0\n"), dir, "agent.toml")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	logNotices(slog.New(slog.NewTextHandler(&out, nil)), cfg)
	levels := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		for _, key := range []string{"bootstrap.resolve.timeout.ms", "max.warmup.replicas", "cache.max.bytes.buffering"} {
			if strings.Contains(line, key) {
				levels[key] = strings.Fields(line)[1]
			}
		}
	}
	if levels["bootstrap.resolve.timeout.ms"] != "level=WARN" || levels["cache.max.bytes.buffering"] != "level=WARN" || levels["max.warmup.replicas"] != "level=INFO" {
		t.Fatalf("log:\n%s\nwant warnings for bootstrap.resolve.timeout.ms and cache.max.bytes.buffering and an info line for max.warmup.replicas", out.String())
	}
}

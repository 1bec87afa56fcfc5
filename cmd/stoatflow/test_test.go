package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTestDir(t *testing.T, tests string) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "p.lua"), []byte("local b = require(\"stoat\").builder()\nb:stream(\"in\"):mapValues(function(v) return v:upper() end):to(\"out\")\nreturn b\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "p_test.lua"), []byte(tests), 0o644)
	return dir
}

const cliTests = `local t = require("stoat.test")
t.test("upper", function()
  local d = t.driver("p.lua")
  d:createInputTopic("in"):pipeInput("k", "hi")
  t.assertEquals(d:createOutputTopic("out"):readValue(), "HI")
end)
t.test("broken", function()
  t.assertEquals(1, 2)
end)
`

func TestTestCommand(t *testing.T) {
	dir := writeTestDir(t, cliTests)
	code, out, errOut := runCLI("test", dir)
	if code != 1 || !strings.Contains(out, "--- FAIL: ") || !strings.HasSuffix(out, "1 passed, 1 failed\n") {
		t.Fatalf("exit %d, out %q, err %q", code, out, errOut)
	}
	code, out, errOut = runCLI("test", "-v", "-run", "^upper$", dir)
	if code != 0 || !strings.Contains(out, "--- PASS: ") || !strings.HasSuffix(out, "1 passed, 0 failed\n") {
		t.Fatalf("exit %d, out %q, err %q", code, out, errOut)
	}
}

func TestTestCommandErrors(t *testing.T) {
	if code, _, errOut := runCLI("test", t.TempDir()); code != 1 || !strings.Contains(errOut, "no test files") {
		t.Fatalf("no test files: exit %d, err %q", code, errOut)
	}
	if code, _, _ := runCLI("test", "-frobnicate"); code != 2 {
		t.Fatalf("bad flag: exit %d", code)
	}
	if code, _, errOut := runCLI("test", "-run", "(", t.TempDir()); code != 2 || !strings.Contains(errOut, "-run") {
		t.Fatalf("bad -run: exit %d, err %q", code, errOut)
	}
}

// Without paths the command runs scripts/ of the working directory: the repository's own.
func TestTestCommandDefaultsToScripts(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(wd, "..", ".."))
	code, out, errOut := runCLI("test")
	if code != 0 || !strings.Contains(out, " passed, 0 failed\n") {
		t.Fatalf("exit %d, out %q, err %q", code, out, errOut)
	}
}

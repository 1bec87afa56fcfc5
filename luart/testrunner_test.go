package luart

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// upper is a small pipeline under test: in → upper-cased values keyed by their first letter.
const upperScript = `local b = require("stoat").builder()
b:stream("in")
  :filter(function(_, v) return v ~= "skip" end)
  :selectKey(function(_, v) return v:sub(1, 1) end)
  :mapValues(function(v, r)
    if v == "boom" then error("cannot shout boom") end
    print("saw " .. v)
    return v:upper() .. "@" .. r.offset
  end)
  :to("out")
return b
`

// runLuaTests writes files into a temp dir and runs RunTests on it.
func runLuaTests(t *testing.T, files map[string]string, opts TestOptions) (dir string, passed, failed int, out string) {
	t.Helper()
	dir = t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var sb strings.Builder
	opts.Out = &sb
	passed, failed, err := RunTests([]string{dir}, opts)
	if err != nil {
		t.Fatalf("RunTests: %v", err)
	}
	return dir, passed, failed, sb.String()
}

func TestRunTestsPassing(t *testing.T) {
	files := map[string]string{
		"upper.lua": upperScript,
		"upper_test.lua": `local t = require("stoat.test")
t.test("shouts", function()
  local d = t.driver("upper.lua")
  local input = d:createInputTopic("in")
  local out = d:createOutputTopic("out")
  input:pipeInput("k", "hello")
  t.assertEquals(out:readKeyValue(), {key = "h", value = "HELLO@0"})
  t.assertTrue(out:isEmpty())
end)
t.test("filters", function()
  local d = t.driver{scripts = {"upper.lua"}}
  local input, out = d:createInputTopic("in"), d:createOutputTopic("out")
  input:pipeValueList({"skip", "go"})
  t.assertEquals(out:getQueueSize(), 1)
  t.assertEquals(out:readValue(), "GO@1")
end)
`,
	}
	_, passed, failed, out := runLuaTests(t, files, TestOptions{})
	if passed != 2 || failed != 0 || out != "2 passed, 0 failed\n" {
		t.Fatalf("passed %d failed %d, output:\n%s", passed, failed, out)
	}
	if strings.Contains(out, "--- PASS") || strings.Contains(out, "saw hello") {
		t.Fatalf("quiet run printed test lines or pipeline output:\n%s", out)
	}
	dir, _, _, out := runLuaTests(t, files, TestOptions{Verbose: true})
	name := filepath.Join(dir, "upper_test.lua")
	for _, want := range []string{
		"=== RUN   " + name + ": shouts\n",
		"--- PASS: " + name + ": shouts (",
		"--- PASS: " + name + ": filters (",
		`msg="saw hello"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("verbose output lacks %q:\n%s", want, out)
		}
	}
}

func TestRunTestsFailingAssertionNamesLineAndShowsDiff(t *testing.T) {
	dir, passed, failed, out := runLuaTests(t, map[string]string{
		"upper.lua": upperScript,
		"upper_test.lua": `local t = require("stoat.test")
t.test("wrong key", function()
  local d = t.driver("upper.lua")
  d:createInputTopic("in"):pipeInput("k", "hello")
  t.assertEquals(d:createOutputTopic("out"):readKeyValue(),
    {key = "x", value = "HELLO@0"})
  error("not reached")
end)
t.test("still runs", function() end)
`,
	}, TestOptions{})
	if passed != 1 || failed != 1 {
		t.Fatalf("passed %d failed %d, output:\n%s", passed, failed, out)
	}
	name := filepath.Join(dir, "upper_test.lua")
	for _, want := range []string{
		"--- FAIL: " + name + ": wrong key (",
		"    " + name + ":5: assertEquals: values differ (-expected +actual)\n",
		"\n        -  key = \"x\",\n        +  key = \"h\",\n",
		"\n           value = \"HELLO@0\",\n",
		"\n1 passed, 1 failed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "not reached") {
		t.Errorf("the test went on after its failed assertion:\n%s", out)
	}
}

func TestRunTestsLoadErrors(t *testing.T) {
	dir, passed, failed, out := runLuaTests(t, map[string]string{
		"bad.lua":         "local b = require(\"stoat\").builder()\nb:stream(\"in\"):fliter(function() end)\nreturn b\n",
		"syntax_test.lua": "local t = require(\"stoat.test\")\nt.test(\"x\", function()\nend\n",
		"empty_test.lua":  "local t = require(\"stoat.test\")\n",
		"twice_test.lua":  "local t = require(\"stoat.test\")\nt.test(\"a\", function() end)\nt.test(\"a\", function() end)\n",
		"driver_test.lua": "local t = require(\"stoat.test\")\nt.test(\"loads\", function()\n  t.driver(\"bad.lua\")\nend)\n",
	}, TestOptions{})
	if passed != 0 || failed != 4 {
		t.Fatalf("passed %d failed %d, output:\n%s", passed, failed, out)
	}
	for _, want := range []string{
		"--- FAIL: " + filepath.Join(dir, "syntax_test.lua") + " (",
		"--- FAIL: " + filepath.Join(dir, "empty_test.lua") + " (",
		"no tests (register them with t.test",
		filepath.Join(dir, "twice_test.lua") + `:3: there is already a test named "a"`,
		filepath.Join(dir, "driver_test.lua") + ":3: t.driver: " + filepath.Join(dir, "bad.lua") + `:2: KStream has no method "fliter"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestRunTestsRunFilter(t *testing.T) {
	_, passed, failed, out := runLuaTests(t, map[string]string{
		"f_test.lua": `local t = require("stoat.test")
t.test("alpha", function() end)
t.test("beta", function() t.fail("beta ran") end)
t.test("alphabet", function() end)
`,
	}, TestOptions{Run: regexp.MustCompile("^alpha")})
	if passed != 2 || failed != 0 || strings.Contains(out, "beta ran") {
		t.Fatalf("passed %d failed %d, output:\n%s", passed, failed, out)
	}
	_, passed, failed, out = runLuaTests(t, map[string]string{
		"f_test.lua": `require("stoat.test").test("alpha", function() end)`,
	}, TestOptions{Run: regexp.MustCompile("nothing")})
	if passed != 0 || failed != 0 || !strings.Contains(out, "no tests to run") {
		t.Fatalf("passed %d failed %d, output:\n%s", passed, failed, out)
	}
}

func TestRunTestsAssertError(t *testing.T) {
	dir, passed, failed, out := runLuaTests(t, map[string]string{
		"upper.lua": upperScript,
		"e_test.lua": `local t = require("stoat.test")
t.test("plain text with hyphens", function()
  local d = t.driver("upper.lua")
  local input = d:createInputTopic("in")
  local msg = t.assertError(function() input:pipeInput("k", "boom") end, "in-0@0: processor KSTREAM-MAPVALUES")
  t.assertTrue(msg:find("cannot shout boom", 1, true) ~= nil)
end)
t.test("lua pattern", function()
  t.assertError(function() error("code 42") end, "code %d+$")
end)
t.test("no error", function()
  t.assertError(function() end, "x")
end)
t.test("wrong error", function()
  t.assertError(function() error("something else") end, "expected words")
end)
t.test("processing error without assertError", function()
  local d = t.driver("upper.lua")
  d:createInputTopic("in"):pipeInput("k", "boom")
end)
`,
	}, TestOptions{})
	if passed != 2 || failed != 3 {
		t.Fatalf("passed %d failed %d, output:\n%s", passed, failed, out)
	}
	name := filepath.Join(dir, "e_test.lua")
	for _, want := range []string{
		name + ":12: assertError: the function raised no error",
		name + `:15: assertError: the error does not match "expected words"`,
		"error: " + name + ":15: something else",
		name + ":19: in-0@0: processor KSTREAM-MAPVALUES-0000000003: " + filepath.Join(dir, "upper.lua") + ":6: cannot shout boom",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestOutputTopicReads(t *testing.T) {
	_, passed, failed, out := runLuaTests(t, map[string]string{
		"json.lua": `local b = require("stoat").builder()
b:stream("in", {valueSerde = "json"}):to("out", {valueSerde = "json"})
return b
`,
		"o_test.lua": `local t = require("stoat.test")
local s = require("stoat")
local function open()
  local d = t.driver("json.lua")
  return d:createInputTopic("in", {valueSerde = "json"}), d:createOutputTopic("out", {valueSerde = "json"})
end
t.test("map keeps the last value, a tombstone as null", function()
  local input, out = open()
  input:pipeKeyValueList({{"a", 1}, {"b", 2}, {key = "a", value = 3}, {key = "c"}})
  t.assertEquals(out:readKeyValuesToMap(), {a = 3, b = 2, c = s.null})
end)
t.test("null key in a map", function()
  local input, out = open()
  input:pipeInput({x = 1})
  t.assertError(function() out:readKeyValuesToMap() end, "has a record with a null key")
end)
t.test("empty read", function()
  local _, out = open()
  t.assertError(function() out:readKeyValue() end, "no more records in topic out")
  t.assertEquals(out:readKeyValuesToList(), {})
end)
t.test("json values, records and headers", function()
  local input, out = open()
  input:pipeInput("k", {n = 1, list = {1, s.null, "x"}, empty = s.array()},
    {timestamp = 7, headers = {{key = "h", value = "1"}, {key = "h", value = "2"}, {key = "none", value = s.null}}})
  input:pipeValueList({"a", "b"}, {timestamp = 100, advance = 10})
  local recs = out:readRecordsToList()
  t.assertEquals(recs[1].value, {n = 1, list = {1, s.null, "x"}, empty = s.array()})
  t.assertEquals(recs[1].timestamp, 7)
  t.assertEquals(recs[1].headers, {h = "2", none = s.null})
  t.assertEquals(recs[1].headers:all(), {{key = "h", value = "1"}, {key = "h", value = "2"}, {key = "none", value = s.null}})
  t.assertEquals({recs[2].timestamp, recs[3].timestamp}, {100, 110})
  t.assertEquals({recs[2].key, recs[2].partition}, {nil, 0})
end)
t.test("an empty array is not an empty object", function()
  local input, out = open()
  input:pipeInput(s.array())
  t.assertEquals(out:readValue(), {})
end)
`,
	}, TestOptions{})
	if passed != 4 || failed != 1 || !strings.Contains(out, "-{}\n        +stoat.array({})") {
		t.Fatalf("passed %d failed %d, output:\n%s", passed, failed, out)
	}
}

func TestDriverLifecycle(t *testing.T) {
	_, passed, failed, out := runLuaTests(t, map[string]string{
		"upper.lua": upperScript,
		"d_test.lua": `local t = require("stoat.test")
local s = require("stoat")
local kept
t.test("closed driver", function()
  local d = t.driver("upper.lua")
  kept = d:createOutputTopic("out")
  d:close()
  t.assertError(function() d:createInputTopic("in") end, "the TopologyTestDriver is closed")
end)
t.test("a driver is closed after its test", function()
  t.assertError(function() kept:isEmpty() end, "is closed")
end)
t.test("wall clock", function()
  local d = t.driver{scripts = {"upper.lua"}, wallClockMs = 1000}
  d:advanceWallClockTime(500)
  local input, out = d:createInputTopic("in"), d:createOutputTopic("out")
  input:pipeInput("go")
  t.assertEquals(out:readRecord().timestamp, 1500)
  t.assertError(function() d:advanceWallClockTime(-1) end, "only moves forward")
end)
t.test("durations as the DSL writes them", function()
  local d = t.driver{scripts = {"upper.lua"}, wallClockMs = 1000}
  d:advanceWallClockTime("2s")
  local input, out = d:createInputTopic("in"), d:createOutputTopic("out")
  input:pipeInput("a")
  input:advanceTime("1m")
  input:pipeInput("b")
  input:advanceTime(5)
  input:pipeValueList({"c", "d"}, {advance = "1s"})
  d:advanceWallClockTime(10)
  input:pipeValueList({"e"})
  local ts = {}
  for _, r in ipairs(out:readRecordsToList()) do ts[#ts + 1] = r.timestamp end
  t.assertEquals(ts, {3000, 63000, 63005, 64005, 63015})
  t.assertError(function() d:advanceWallClockTime("2 fortnights") end, 'advanceWallClockTime: invalid duration "2 fortnights"')
  t.assertError(function() input:advanceTime(-1) end, "only moves forward")
  t.assertError(function() input:advanceTime({}) end, "advanceTime: a duration is milliseconds or a string")
  t.assertError(function() input:pipeValueList({"x"}, {advance = "soon"}) end, 'advance: invalid duration "soon"')
end)
t.test("refusals", function()
  local d = t.driver("upper.lua")
  t.assertError(function() d:createInputTopic("out") end, 'topic "out" is not a source of this topology (sources: in)')
  t.assertError(function() d:createInputTopic("in", {keySerde = s.serde{serialize = tostring, deserialize = tostring}}) end, "must be a serde name")
  t.assertError(function() d:createOutputTopic("out", {valueSerde = "thrift"}) end, 'unknown serde "thrift"')
  t.assertError(function() d:getKeyValueStore("counts") end, 'no state store named "counts" in this topology')
  t.assertError(function() t.test("nested", function() end) end, "top level")
  t.assertError(function() d:createInputTopic("in"):pipeInput("k", 42) end, "cannot serialize a number")
end)
t.test("hangs", function() while true do end end)
`,
	}, TestOptions{Timeout: 200 * time.Millisecond})
	if passed != 5 || failed != 1 || !strings.Contains(out, "the test exceeded its time budget of 200ms") {
		t.Fatalf("passed %d failed %d, output:\n%s", passed, failed, out)
	}
}

// The driver takes the agent's exception handlers: LogAndContinue skips the record, and a
// dead-letter topic gets the failed record as Kafka Streams writes it, its headers first.
func TestDriverExceptionHandlers(t *testing.T) {
	_, passed, failed, out := runLuaTests(t, map[string]string{
		"upper.lua": upperScript,
		"long.lua": `local b = require("stoat").builder()
b:stream("in", {valueSerde = "long"}):to("out", {valueSerde = "long"})
return b
`,
		"h_test.lua": `local t = require("stoat.test")
local s = require("stoat")
t.test("processing error, LogAndContinue, dead letter", function()
  local d = t.driver{scripts = {"upper.lua"}, processingExceptionHandler = "LogAndContinue", deadLetterQueueTopic = "dlq"}
  local input, out, dlq = d:createInputTopic("in"), d:createOutputTopic("out"), d:createOutputTopic("dlq")
  input:pipeInput("k", "boom", {timestamp = 5, headers = {{key = "h", value = "1"}, {key = "h", value = s.null}}})
  input:pipeInput("k", "fine")
  t.assertEquals(out:readValuesToList(), {"FINE@1"})
  local r = dlq:readRecord()
  t.assertEquals({r.key, r.value, r.timestamp}, {"k", "boom", 5})
  local names, h = {}, r.headers:all()
  for i, x in ipairs(h) do names[i] = x.key end
  t.assertEquals(names, {"h", "h", "__streams.errors.exception", "__streams.errors.message", "__streams.errors.stacktrace",
    "__streams.errors.topic", "__streams.errors.partition", "__streams.errors.offset"})
  t.assertEquals(h[2].value, s.null)
  t.assertEquals(r.headers["__streams.errors.exception"], "stoatflow.ProcessingError")
  t.assertTrue(r.headers["__streams.errors.message"]:find("cannot shout boom", 1, true) ~= nil)
  t.assertEquals({r.headers["__streams.errors.topic"], r.headers["__streams.errors.partition"], r.headers["__streams.errors.offset"]}, {"in", "0", "0"})
end)
t.test("deserialization error, LogAndContinue", function()
  local d = t.driver{scripts = {"long.lua"}, deserializationExceptionHandler = "LogAndContinue"}
  local input, out = d:createInputTopic("in", {valueSerde = "bytes"}), d:createOutputTopic("out", {valueSerde = "long"})
  input:pipeInput("k", "abc")
  input:pipeInput("k", "\0\0\0\0\0\0\0\42")
  t.assertEquals(out:readValuesToList(), {42})
end)
t.test("LogAndFail, dead letter", function()
  local d = t.driver{scripts = {"upper.lua"}, deadLetterQueueTopic = "dlq"}
  local input, dlq = d:createInputTopic("in"), d:createOutputTopic("dlq")
  t.assertError(function() input:pipeInput("k", "boom") end, "cannot shout boom")
  t.assertEquals(dlq:readValue(), "boom")
end)
t.test("refusal", function()
  t.assertError(function() t.driver{scripts = {"upper.lua"}, processingExceptionHandler = "LogAndIgnore"} end,
    'processingExceptionHandler must be "LogAndFail" or "LogAndContinue", not LogAndIgnore')
end)
`,
	}, TestOptions{})
	if passed != 4 || failed != 0 {
		t.Fatalf("passed %d failed %d, output:\n%s", passed, failed, out)
	}
}

func TestRunTestsPathErrors(t *testing.T) {
	if _, _, err := RunTests([]string{t.TempDir()}, TestOptions{Out: &strings.Builder{}}); err == nil || !strings.Contains(err.Error(), "no test files (*_test.lua) in") {
		t.Fatalf("empty dir: %v", err)
	}
	if _, _, err := RunTests([]string{filepath.Join(t.TempDir(), "missing")}, TestOptions{Out: &strings.Builder{}}); err == nil {
		t.Fatal("missing path: no error")
	}
}

// The example pipeline's own tests pass.
func TestShoutScriptTests(t *testing.T) {
	var sb strings.Builder
	passed, failed, err := RunTests([]string{"../scripts/shout_test.lua"}, TestOptions{Out: &sb})
	if err != nil || failed != 0 || passed == 0 {
		t.Fatalf("passed %d failed %d err %v, output:\n%s", passed, failed, err, sb.String())
	}
}

// A script that does not load is one failure, however many tests (in however many files)
// drive it: the others are reported as SKIP and counted apart.
func TestOneBrokenScriptIsOneFailure(t *testing.T) {
	tests := `local t = require("stoat.test")
t.test("one", function() t.driver("broken.lua") end)
t.test("two", function() t.driver("broken.lua") end)
t.test("other", function() t.assertEquals(1, 1) end)
`
	_, passed, failed, out := runLuaTests(t, map[string]string{
		"broken.lua":    "local b = require(\"stoat\").builder()\nb:stream(\"in\"):fliter(function() return true end):to(\"out\")\nreturn b\n",
		"a_test.lua":    tests,
		"b_test.lua":    tests,
		"ok.lua":        upperScript,
		"fail_test.lua": "local t = require(\"stoat.test\")\nt.test(\"real\", function() t.driver(\"ok.lua\"); t.assertEquals(1, 2) end)\n",
	}, TestOptions{})
	if passed != 2 || failed != 2 {
		t.Fatalf("passed %d failed %d, want 2 and 2 (one for the broken script, one real):\n%s", passed, failed, out)
	}
	if strings.Count(out, `broken.lua:2: KStream has no method "fliter"`) != 1 || strings.Count(out, "--- SKIP: ") != 3 ||
		!strings.Contains(out, "3 more test(s) stopped at a script that does not load, each reported once above\n2 passed, 2 failed\n") {
		t.Fatalf("report:\n%s", out)
	}
}

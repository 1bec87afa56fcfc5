package luart

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

const prelude = "local s = require(\"stoat\")\nlocal b = s.builder()\n"

func TestSandboxRefusesEscapes(t *testing.T) {
	cases := []struct {
		name, code, want string
	}{
		{"os.execute", `os.execute("true")`, "os.execute is not available: StoatFlow scripts run in a sandbox without it"},
		{"io.open", `io.open("/etc/passwd")`, "io.open is not available: StoatFlow scripts run in a sandbox without it"},
		{"loadfile", `loadfile("/etc/passwd")`, "loadfile is not available: StoatFlow scripts run in a sandbox without it"},
		{"dofile", `dofile("/etc/passwd")`, "dofile is not available: StoatFlow scripts run in a sandbox without it"},
		{"debug", `debug.getinfo(1)`, "debug.getinfo is not available: StoatFlow scripts run in a sandbox without it"},
		{"require parent", `require("../x")`, "module names are dotted identifiers"},
		{"require absolute", `require("/etc/passwd")`, "module names are dotted identifiers"},
		{"string.dump", `string.dump(function() end)`, "string.dump is not available: StoatFlow scripts run in a sandbox without it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := load(t, prelude+c.code+"\nreturn b", nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
			if !strings.Contains(err.Error(), "pipeline.lua:3") {
				t.Fatalf("err = %v, want the script line pipeline.lua:3", err)
			}
		})
	}
}

// io, debug and package are stand-ins, as docs/lua.md says: tables outside _G whose Lua 5.1
// functions exist only to say they are not available, so that a script using one is told so
// instead of "attempt to index a nil value".
func TestSandboxLibrariesAreStandIns(t *testing.T) {
	_, _, err := load(t, prelude+`for _, lib in ipairs({"io", "debug", "package"}) do
  assert(rawget(_G, lib) == nil, lib .. " is in _G")
  assert(type(_G[lib]) == "table", lib .. " is no table")
end
assert(type(io.write) == "function" and io.nonsense == nil)
assert(not pcall(io.write, "x"))
return b`, nil)
	if err != nil {
		t.Fatal(err)
	}
}

func TestRequireBelowScriptDir(t *testing.T) {
	_, b, err := load(t, prelude+`local util = require("lib.util")
b:stream("in"):mapValues(function(v) return util.shout(v) end):to("out")
return b`, map[string]string{"lib/util.lua": `return { shout = function(v) return v:upper() .. "!" end }`})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.SourceTopics()) != 1 {
		t.Fatal("topology not built")
	}
}

// A module that is not there names the one meant: stoat, or a module beside it.
func TestRequireOfAMissingModuleNamesTheClosest(t *testing.T) {
	lib := map[string]string{"lib/util.lua": `return {}`, "lib/util_test.lua": `return {}`}
	for _, c := range []struct{ name, suggestion string }{
		{"stoatt", `; did you mean require("stoat")?`},
		{"lib.utils", `; did you mean require("lib.util")?`},
		{"lib.nope", ""},
	} {
		_, _, err := load(t, prelude+fmt.Sprintf("require(%q)\nreturn b", c.name), lib)
		want := fmt.Sprintf(`pipeline.lua:3: require(%q): no file `, c.name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want %q", err, want)
		}
		if c.suggestion != "" && !strings.HasSuffix(err.Error(), c.suggestion) || c.suggestion == "" && strings.Contains(err.Error(), "did you mean") {
			t.Fatalf("err = %v, want the suggestion %q", err, c.suggestion)
		}
	}
}

func TestInfiniteLoopIsStoppedWithLine(t *testing.T) {
	start := time.Now()
	_, _, err := load(t, prelude+"while true do end\nreturn b", nil)
	var se *ScriptError
	if !errors.As(err, &se) || !se.Timeout {
		t.Fatalf("err = %v, want a time-budget ScriptError", err)
	}
	if !strings.Contains(err.Error(), "pipeline.lua:3") || !strings.Contains(err.Error(), "time budget") {
		t.Fatalf("err = %q, want file:line and the budget", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("took %s to stop the loop", time.Since(start))
	}
}

func TestInfiniteLoopInCallbackThenRecovers(t *testing.T) {
	d := driver(t, prelude+`b:stream("in"):mapValues(function(v)
  if v == "hang" then while true do end end
  return v
end):to("out")
return b`)
	err := d.Pipe("in", []byte("k"), []byte("hang"), 1, nil)
	if err == nil || !strings.Contains(err.Error(), "pipeline.lua:4") || !strings.Contains(err.Error(), "in-0@0") {
		t.Fatalf("err = %v, want file:line and topic-partition@offset", err)
	}
	// The runtime stays usable after a stopped call.
	pipe(t, d, "in", "k", "fine")
	if got := outputs(d, "out"); len(got) != 1 || got[0].v != "fine" {
		t.Fatalf("out = %v", got)
	}
}

func TestLoadErrorsNameFileAndLine(t *testing.T) {
	cases := []struct{ name, code, want string }{
		{"syntax", "local x = = 1\nreturn b", "pipeline.lua"},
		{"unknown method", `b:stream("in"):fliter(function() end)` + "\nreturn b", "pipeline.lua:3: KStream has no method \"fliter\""},
		{"removed", `b:stream("in"):through("x")` + "\nreturn b", "pipeline.lua:3: KStream#through was removed in Kafka Streams 4.0"},
		{"bad option", `b:stream("in", {valueSerd = "json"})` + "\nreturn b", "pipeline.lua:3: stream: unknown option \"valueSerd\""},
		{"bad serde", `b:stream("in", {valueSerde = "yaml"})` + "\nreturn b", "pipeline.lua:3: valueSerde"},
		{"no return", `b:stream("in")`, "must end with `return b`"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := load(t, prelude+c.code, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestSyntaxErrorNamesFileAndLine(t *testing.T) {
	_, _, err := load(t, prelude+"local x = = 1\nreturn b", nil)
	if err == nil || !strings.Contains(err.Error(), "pipeline.lua:3: syntax error near '='") {
		t.Fatalf("err = %v, want pipeline.lua:3: syntax error near '='", err)
	}
}

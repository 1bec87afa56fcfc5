package luart

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/pipeline"
)

// A coroutine made when the script loads keeps working after a call elsewhere ran out of its
// budget; one stopped by the budget while it ran is dead, and says so.
func TestLoadTimeCoroutineSurvivesTimeouts(t *testing.T) {
	d := driver(t, prelude+`local gen = coroutine.wrap(function()
  local i = 0
  while true do i = i + 1; coroutine.yield(i) end
end)
local echo = coroutine.wrap(function(v)
  while true do
    if v == "spin" then while true do end end
    v = coroutine.yield(v)
  end
end)
b:stream("in"):mapValues(function(v)
  if v == "hang" then while true do end end
  if v == "spin" or v == "after" then return echo(v) end
  return v .. gen()
end):to("out")
return b`)
	pipe(t, d, "in", "k", "a")
	wantBudgetError(t, d.Pipe("in", []byte("k"), []byte("hang"), 1, nil), "pipeline.lua:14", "in-")
	pipe(t, d, "in", "k", "b")
	if got := outputs(d, "out"); len(got) != 2 || got[0].v != "a1" || got[1].v != "b2" {
		t.Fatalf("out = %v, want a1 and b2", got)
	}
	wantBudgetError(t, d.Pipe("in", []byte("k"), []byte("spin"), 1, nil), "pipeline.lua:", "in-")
	err := d.Pipe("in", []byte("k"), []byte("after"), 1, nil)
	if err == nil || !strings.Contains(err.Error(), "pipeline.lua:15: can not resume a dead thread") {
		t.Fatalf("err = %v, want the stopped coroutine reported dead at pipeline.lua:15", err)
	}
	pipe(t, d, "in", "k", "c")
	if got := outputs(d, "out"); len(got) != 1 || got[0].v != "c3" {
		t.Fatalf("out = %v, want c3", got)
	}
}

// What one script does to the library tables, _G or the stoat module stays in that script.
func TestScriptsHaveTheirOwnLibraries(t *testing.T) {
	dir := t.TempDir()
	scripts := map[string]string{
		"a.lua": prelude + `rawset(string, "lower", function() return "pwned" end)
string.upper = nil
rawset(table, "concat", nil)
_G.shared = "from a"
rawset(s, "builder", nil)
assert(getmetatable("") == false, "the string metatable is not handed out")
b:stream("a"):mapValues(function(v) return string.lower(v) end):to("out-a")
return b`,
		"b.lua": prelude + `b:stream("b"):mapValues(function(v)
  return table.concat({v:lower(), string.lower(v), string.upper(v), tostring(shared)}, " ")
end):to("out-b")
return b`,
	}
	var paths []string
	for _, name := range []string{"a.lua", "b.lua"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(scripts[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	rt, err := New(Options{CallTimeout: time.Second, Stdout: &strings.Builder{}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	b, err := rt.LoadScripts(paths)
	if err != nil {
		t.Fatal(err)
	}
	d, err := pipeline.NewDriver(b, pipeline.DriverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pipe(t, d, "a", "k", "ABC")
	pipe(t, d, "b", "k", "ABC")
	if got := outputs(d, "out-a"); len(got) != 1 || got[0].v != "pwned" {
		t.Fatalf("out-a = %v, want a's own lower", got)
	}
	if got := outputs(d, "out-b"); len(got) != 1 || got[0].v != "abc abc ABC nil" {
		t.Fatalf("out-b = %v, want b's libraries untouched", got)
	}
}

// Error values that are not strings get the place they were raised and a readable
// rendering; a message of any size is cut to maxErrorText; the error metric only names
// files it compiled.
func TestErrorValuesAndSizes(t *testing.T) {
	for _, c := range []struct{ name, code, want string }{
		{"table", `error({code = 42, reason = "bad", 1, 2})`, `pipeline.lua:4: error object {1, 2, code = 42, reason = "bad"}`},
		{"nested", `error({inner = {deeper = {x = 1}}, [true] = 0})`, `pipeline.lua:4: error object {inner = {deeper = {...}}, [true] = 0}`},
		{"tostring", `error(setmetatable({}, {__tostring = function() return "custom error" end}))`, `pipeline.lua:4: custom error`},
		{"nil", `error(nil)`, `pipeline.lua:4: error object nil`},
		{"level 0", `error("no place", 0)`, `pipeline.lua:4: no place`},
		{"made-up place", `error("elsewhere.lua:7: boom", 0)`, `elsewhere.lua:7: boom`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var labels []string
			_, b, err := loadWith(t, Options{CallTimeout: time.Second, OnError: func(s string) { labels = append(labels, s) }}, prelude+`b:stream("in"):mapValues(function(v)
  if v == "bad" then `+c.code+` end
  return v
end):to("out")
return b`, nil)
			if err != nil {
				t.Fatal(err)
			}
			d, err := pipeline.NewDriver(b, pipeline.DriverOptions{})
			if err != nil {
				t.Fatal(err)
			}
			err = d.Pipe("in", []byte("k"), []byte("bad"), 1, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
			if len(labels) != 1 || labels[0] != "<lua>" && !strings.HasSuffix(labels[0], "pipeline.lua") {
				t.Fatalf("error metric labels %q, want the script or <lua>", labels)
			}
			if c.name == "made-up place" && labels[0] != "<lua>" {
				t.Fatalf("label %q for a place no script has, want <lua>", labels[0])
			}
		})
	}
	t.Run("10 MiB message", func(t *testing.T) {
		d := driver(t, prelude+`b:stream("in"):mapValues(function(v)
  error(string.rep("x", 10 * 2^20))
end):to("out")
return b`)
		err := d.Pipe("in", []byte("k"), []byte("v"), 1, nil)
		var se *ScriptError
		if !errors.As(err, &se) || len(se.Message) > maxErrorText || !strings.HasPrefix(filepath.Base(se.Message), "pipeline.lua:4: xxx") || !strings.HasSuffix(se.Message, " bytes in all]") {
			t.Fatalf("err = %.200q... (%d bytes), want at most %d bytes from pipeline.lua:4, saying how long it was", err, len(err.Error()), maxErrorText)
		}
	})
}

// `..` compiled as a call, and coroutine.wrap on resume, behave as Lua's.
func TestConcatAndWrapKeepLuaSemantics(t *testing.T) {
	_, _, err := load(t, prelude+`
assert(1 .. "" == "1" and 1.5 .. "|" .. -2 == "1.5|-2")
local mt = {__concat = function(a, b)
  return (type(a) == "table" and "T" or a) .. "+" .. (type(b) == "table" and "T" or b)
end}
local o = setmetatable({}, mt)
assert(o .. "x" == "T+x", o .. "x")
assert("a" .. "b" .. o == "a" .. "b+T", "a" .. "b" .. o)
assert(o .. o == "T+T")
local ok, msg = pcall(function() return "a" .. nil end)
assert(not ok and msg:find("pipeline.lua:12: cannot perform concat operation between string and nil", 1, true), msg)
local function f() return "a" .. "b" end
assert(select("#", f()) == 1 and f() == "ab")
local gen = coroutine.wrap(function(a, b)
  local c = coroutine.yield(a + b)
  local d = coroutine.yield(c * 2)
  error("done " .. d)
end)
assert(gen(1, 2) == 3 and gen(5) == 10)
local ok3, e = pcall(gen, "x")
assert(not ok3 and e:find("pipeline.lua:19: done x", 1, true), e)
local ok4, e4 = pcall(gen)
assert(not ok4 and e4:find("can not resume a dead thread", 1, true), e4)
local co = coroutine.create(function() while true do end end)
local ok5, e5 = coroutine.resume(co)
error("not reached: " .. tostring(ok5) .. tostring(e5))
return b`, nil)
	var se *ScriptError
	if !errors.As(err, &se) || !se.Timeout || !strings.Contains(err.Error(), "pipeline.lua:") {
		t.Fatalf("err = %v, want the coroutine's loop stopped by the time budget (after every assertion held)", err)
	}
}

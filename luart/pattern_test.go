package luart

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// The pattern functions as scripts see them, through the runtime: its sandbox installs them
// (luart/pattern has their cases).

// Callbacks call the pattern functions as methods of their string arguments.
func TestPatternFunctionsInPipeline(t *testing.T) {
	d := driver(t, prelude+`b:stream("in")
  :flatMapValues(function(line)
    local words = {}
    for w in line:lower():gmatch("%a+") do words[#words + 1] = w end
    return words
  end)
  :mapValues(function(w)
    local s, e = w:find("o+")
    local first = w:match("^(%a)")
    local swapped, n = w:gsub("(%a)(%a)", "%2%1", 1)
    local title = ("x-" .. w):gsub("%f[%a]%a", string.upper)
    return table.concat({w, tostring(s), tostring(e), first, swapped, n, title}, " ")
  end)
  :to("out")
return b`)
	pipe(t, d, "in", "k", "Foo 0042 bar-BAZ")
	var got []string
	for _, o := range outputs(d, "out") {
		got = append(got, o.v)
	}
	want := []string{"foo 2 3 f ofo 1 X-Foo", "bar nil nil b abr 1 X-Bar", "baz nil nil b abz 1 X-Baz"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("out = %q, want %q", got, want)
	}
}

func TestPatternErrorsNameFileAndLine(t *testing.T) {
	cases := []struct{ name, code, want string }{
		{"find", `local x = ("x"):find("[a")`, "pipeline.lua:3: malformed pattern (missing ']')"},
		{"match", `local x = string.match("x", "%")`, "pipeline.lua:3: malformed pattern (ends with '%')"},
		{"gsub", `local x = ("x"):gsub("x", "%2")`, "pipeline.lua:3: invalid capture index"},
		{"gsub value", `local x = ("x"):gsub("x", {x = {}})`, "pipeline.lua:3: invalid replacement value (a table)"},
		{"gmatch", "for w in (\"x\"):gmatch(\"%f\") do\nend", "pipeline.lua:3: missing '[' after '%f' in pattern"},
		{"too complex", `local x = (""):match(("a*"):rep(300))`, "pipeline.lua:3: pattern too complex"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := load(t, prelude+c.code+"\nreturn b", nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// A run-time pattern error names the callback's line, like any other error in a callback.
func TestPatternErrorInCallback(t *testing.T) {
	d := driver(t, prelude+`b:stream("in"):mapValues(function(v)
  return v:find("%f")
end):to("out")
return b`)
	err := d.Pipe("in", []byte("k"), []byte("x"), 1, nil)
	if err == nil || !strings.Contains(err.Error(), "pipeline.lua:4: missing '[' after '%f' in pattern") {
		t.Fatalf("err = %v, want pipeline.lua:4: missing '[' after '%%f' in pattern", err)
	}
}

// One find that backtracks for ages is stopped by the call's time budget (200ms in load).
func TestPatternLongMatchIsStoppedByBudget(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		_, _, err := load(t, prelude+`local x = ("a"):rep(5000):find(("a*"):rep(40) .. "b")`+"\nreturn b", nil)
		done <- err
	}()
	select {
	case err := <-done:
		var se *ScriptError
		if !errors.As(err, &se) || !se.Timeout || !strings.Contains(err.Error(), "pipeline.lua:3") {
			t.Fatalf("err = %v, want a time-budget error at pipeline.lua:3", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the find was not stopped within 30s")
	}
}

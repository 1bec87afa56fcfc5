package luart

import (
	"strings"
	"testing"
)

// loadError loads a script that must fail and returns its error text from the script's
// name on.
func loadError(t *testing.T, script string) string {
	t.Helper()
	_, _, err := load(t, script, nil)
	if err == nil {
		t.Fatalf("the script loaded:\n%s", script)
	}
	return fromScript(err.Error())
}

// fromScript cuts the temporary directory off a message naming pipeline.lua.
func fromScript(msg string) string {
	if i := strings.Index(msg, "pipeline.lua"); i >= 0 {
		return msg[i:]
	}
	return msg
}

// A misspelled method in a chain of calls is reported at its own line, with the method it
// most likely means; a name close to none lists the methods.
func TestMisspelledMethodNamesItsLineAndTheClosestMethod(t *testing.T) {
	err := loadError(t, prelude+`b:stream("in")
  :filter(function() return true end)
  :groupBY(function(k) return k end)
  :count()
return b`)
	if !strings.Contains(err, `pipeline.lua:5: KStream has no method "groupBY"; did you mean "groupBy"?`) {
		t.Fatalf("err = %s", err)
	}
	err = loadError(t, prelude+"b:stream(\"in\")\n\n  :xyzzyplugh()\nreturn b")
	if !strings.Contains(err, `pipeline.lua:5: KStream has no method "xyzzyplugh" (it has: filter, filterNot, `) {
		t.Fatalf("err = %s", err)
	}
	// Errors a method raises about its arguments name the method's line too.
	err = loadError(t, prelude+"b:stream(\"in\")\n  :filter(function() return true end)\n  :mapValues(function(v) return v end, { nmae = \"x\" })\nreturn b")
	if !strings.Contains(err, `pipeline.lua:5: mapValues: unknown option "nmae"`) {
		t.Fatalf("err = %s", err)
	}
	// Methods defined in the script (t:name) keep the calls after them on their lines.
	err = loadError(t, prelude+"local u = {}\nfunction u:id(v) return v end\nb:stream(\"in\")\n  :mapValues(function(v) return u:id(v) end)\n  :fliter(function() return true end)\nreturn b")
	if !strings.Contains(err, `pipeline.lua:7: KStream has no method "fliter"; did you mean "filter"?`) {
		t.Fatalf("err = %s", err)
	}
}

// Kafka Streams APIs that 4.x removed (or StoatFlow leaves out as deprecated) name what
// replaces them, as KStream#through does.
func TestRemovedJavaAPIsNameTheirReplacement(t *testing.T) {
	for _, c := range []struct{ code, want string }{
		{`s.TimeWindows.of("1m")`, "TimeWindows.of was removed in Kafka Streams 4.0; use s.TimeWindows.ofSizeWithNoGrace(size) or s.TimeWindows.ofSizeAndGrace(size, grace)"},
		{`s.TimeWindows.ofSizeWithNoGrace("1m"):grace("10s")`, "TimeWindows#grace was removed in Kafka Streams 4.0; use s.TimeWindows.ofSizeAndGrace(size, grace)"},
		{`s.SessionWindows.with("5m")`, "SessionWindows.with was removed in Kafka Streams 4.0; use s.SessionWindows.ofInactivityGapWithNoGrace(gap)"},
		{`s.SessionWindows.ofInactivityGapWithNoGrace("5m"):grace("1m")`, "SessionWindows#grace was removed in Kafka Streams 4.0"},
		{`s.SlidingWindows.withTimeDifferenceAndGrace("5m", "1m")`, "SlidingWindows.withTimeDifferenceAndGrace was removed in Kafka Streams 4.0; use s.SlidingWindows.ofTimeDifferenceAndGrace(d, grace)"},
		{`b:stream("in"):through("t")`, "KStream#through was removed in Kafka Streams 4.0; use repartition()"},
		{`s.TimeWindows.ofSize("1m")`, `stoat.TimeWindows has no function "ofSize"`},
		{`s.Suppressed.BufferConfig.unbound()`, `stoat.Suppressed.BufferConfig has no function "unbound"; did you mean "unbounded"?`},
	} {
		err := loadError(t, prelude+c.code+"\nreturn b")
		if !strings.Contains(err, "pipeline.lua:3: "+c.want) {
			t.Errorf("%s: err = %s, want %q", c.code, err, c.want)
		}
	}
}

// A missing `end` is reported where the parser gave up, and names the line of the block
// it belongs to.
func TestMissingEndNamesTheOpenBlock(t *testing.T) {
	for _, c := range []struct{ code, want string }{
		{"b:stream(\"in\"):mapValues(function(v)\n  if v then\n    return v\nend)\nreturn b",
			"pipeline.lua:6: syntax error near ')': 'end' expected (to close 'function' at line 3)"},
		{"b:stream(\"in\"):mapValues(function(v)\n  return v\nreturn b",
			"pipeline.lua:5: syntax error near 'return': 'end' expected (to close 'function' at line 3)"},
		{"local function f(v)\n  for i = 1, 3 do\n    v = v + i\n  end\nreturn b",
			"pipeline.lua:7: syntax error near the end of the file: 'end' expected (to close 'function' at line 3)"},
		{"repeat\n  local x = 1\nreturn b",
			"pipeline.lua:5: syntax error near the end of the file: 'until' expected (to close 'repeat' at line 3)"},
		{"local x = = 1\nreturn b", "pipeline.lua:3: syntax error near '='"},
	} {
		err := loadError(t, prelude+c.code)
		if !strings.HasPrefix(err, c.want) || c.want == "pipeline.lua:3: syntax error near '='" && strings.Contains(err, "expected") {
			t.Errorf("err = %s, want %s", err, c.want)
		}
	}
}

// validate warns of calls of functions the sandbox lacks inside callbacks, where they
// would fail only when a record comes; locals of the same name are not the library's.
func TestUnavailableCallsInCallbacksAreWarnedOf(t *testing.T) {
	rt, _, err := load(t, prelude+`local io = { open = function() return 1 end }
b:stream("in"):mapValues(function(v)
  os.execute("rm -rf /")
  local f = io.open("x")
  return dofile(v)
end):to("out")
return b`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"pipeline.lua:5: os.execute is not available: StoatFlow scripts run in a sandbox without it (docs/lua.md, The sandbox); the call fails when it runs",
		"pipeline.lua:7: dofile is not available: StoatFlow scripts run in a sandbox without it (docs/lua.md, The sandbox); the call fails when it runs",
	}
	var got []string
	for _, w := range rt.Warnings {
		got = append(got, fromScript(w))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

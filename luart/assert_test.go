package luart

import (
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// luaValue evaluates a Lua expression in rt's state, where s is the stoat module.
func luaValue(t *testing.T, rt *Runtime, expr string) lua.LValue {
	t.Helper()
	rt.L.SetGlobal("s", rt.stoatModule())
	if err := rt.L.DoString("return " + expr); err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return rt.pop()
}

func newTestRuntime(t *testing.T) *Runtime {
	t.Helper()
	rt, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	return rt
}

func TestDeepEqual(t *testing.T) {
	rt := newTestRuntime(t)
	cases := []struct {
		a, b  string
		equal bool
	}{
		{`1`, `1.0`, true},
		{`"1"`, `1`, false},
		{`nil`, `nil`, true},
		{`nil`, `s.null`, false},
		{`s.null`, `s.null`, true},
		{`{}`, `{}`, true},
		{`{}`, `s.array()`, false},
		{`s.array()`, `s.array()`, true},
		{`{1, 2}`, `s.array({1, 2})`, true},
		{`{1, 2}`, `{2, 1}`, false},
		{`{1, 2}`, `{1, 2, 3}`, false},
		{`{a = {b = {1, s.null}}}`, `{a = {b = {1, s.null}}}`, true},
		{`{a = {b = {1, s.null}}}`, `{a = {b = {1, false}}}`, false},
		{`{a = 1}`, `{a = 1, b = 2}`, false},
		{`{[1] = "x", n = 1}`, `{"x", n = 1}`, true},
		{`print`, `print`, true},
		{`function() end`, `function() end`, false},
	}
	for _, c := range cases {
		a, b := luaValue(t, rt, c.a), luaValue(t, rt, c.b)
		if got := rt.deepEqual(a, b, 0); got != c.equal {
			t.Errorf("deepEqual(%s, %s) = %v, want %v", c.a, c.b, got, c.equal)
		}
		if got := rt.deepEqual(b, a, 0); got != c.equal {
			t.Errorf("deepEqual(%s, %s) = %v, want %v", c.b, c.a, got, c.equal)
		}
	}
	cycle := luaValue(t, rt, `(function() local x = {}; x.self = x; return x end)()`)
	other := luaValue(t, rt, `(function() local x = {}; x.self = x; return x end)()`)
	if rt.deepEqual(cycle, other, 0) {
		t.Error("two cycles compare equal past the depth limit")
	}
	if !strings.Contains(rt.render(cycle), "<table nested deeper than 100 levels>") {
		t.Error("rendering a cycle does not stop")
	}
}

func TestRender(t *testing.T) {
	rt := newTestRuntime(t)
	cases := map[string]string{
		`"a\"b\n\1"`:  `"a\"b\n\1"`,
		`1.5`:         `1.5`,
		`-3`:          `-3`,
		`1/0`:         `math.huge`,
		`{}`:          `{}`,
		`s.array()`:   `stoat.array({})`,
		`s.null`:      `stoat.null`,
		`{true, "x"}`: "{\n  true,\n  \"x\",\n}",
		`{b = 1, a = {c = s.array({})}, ["two words"] = 2, [3] = 3, ["end"] = 4}`: "{\n  [3] = 3,\n  a = {\n    c = stoat.array({}),\n  },\n  b = 1,\n  [\"end\"] = 4,\n  [\"two words\"] = 2,\n}",
	}
	for expr, want := range cases {
		if got := rt.render(luaValue(t, rt, expr)); got != want {
			t.Errorf("render(%s) =\n%s\nwant\n%s", expr, got, want)
		}
	}
}

func TestLineDiff(t *testing.T) {
	got := strings.Join(lineDiff("{\n  a = 1,\n  b = 2,\n}", "{\n  a = 1,\n  b = 3,\n  c = 4,\n}"), "\n")
	want := " {\n   a = 1,\n-  b = 2,\n+  b = 3,\n+  c = 4,\n }"
	if got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	if got := lineDiff("x", "x"); len(got) != 1 || got[0] != " x" {
		t.Errorf("equal texts: %q", got)
	}
}

package luart

import (
	"math"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// TestToNumberIsLua51s: tonumber as Lua 5.1 answers it (strtod, then strtoul for 0x and
// other bases), where gopher-lua's read "1e3" as nil.
func TestToNumberIsLua51s(t *testing.T) {
	rt, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	env := rt.newEnv(t.TempDir())
	eval := func(expr string) lua.LValue {
		t.Helper()
		fn, err := rt.L.LoadString("return " + expr)
		if err != nil {
			t.Fatal(err)
		}
		fn.Env = env
		rt.L.Push(fn)
		if err := rt.L.PCall(0, 1, nil); err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return rt.pop()
	}
	nan := math.NaN()
	for expr, want := range map[string]float64{
		`tonumber("1e3")`:              1000,
		`tonumber("2E-5")`:             2e-5,
		`tonumber("-1.5e+2")`:          -150,
		`tonumber("1e400")`:            math.Inf(1),
		`tonumber("  42\n")`:           42,
		`tonumber("0x10")`:             16,
		`tonumber("-0XfF")`:            -255,
		`tonumber(".5")`:               0.5,
		`tonumber("5.")`:               5,
		`tonumber("inf")`:              math.Inf(1),
		`tonumber("nan")`:              nan,
		`tonumber("9007199254740993")`: 9007199254740992,
		`tonumber(12)`:                 12,
		`tonumber("10", 10)`:           10,
		`tonumber("ff", 16)`:           255,
		`tonumber("0xff", 16)`:         255,
		`tonumber(" 777 ", 8)`:         511,
		`tonumber("zz", 36)`:           1295,
		`tonumber(10, 16)`:             16,
		`tonumber("11", 2)`:            3,
		`tonumber("-1", 16)`:           math.MaxUint64,
	} {
		got := eval(expr)
		n, ok := got.(lua.LNumber)
		switch {
		case !ok:
			t.Errorf("%s = %v, want %v", expr, got, want)
		case math.IsNaN(want):
			if !math.IsNaN(float64(n)) {
				t.Errorf("%s = %v, want nan", expr, n)
			}
		case float64(n) != want:
			t.Errorf("%s = %v, want %v", expr, n, want)
		}
	}
	for _, expr := range []string{`tonumber("")`, `tonumber("  ")`, `tonumber("1e")`, `tonumber("0x")`,
		`tonumber("12abc")`, `tonumber("1 2")`, `tonumber("1_000")`, `tonumber(nil)`, `tonumber({})`,
		`tonumber("8", 8)`, `tonumber("", 16)`, `tonumber("-", 16)`, `tonumber("1.5", 16)`} {
		if got := eval(expr); got != lua.LNil {
			t.Errorf("%s = %v, want nil", expr, got)
		}
	}
	fn, err := rt.L.LoadString(`return tonumber("1", 37)`)
	if err != nil {
		t.Fatal(err)
	}
	fn.Env = env
	rt.L.Push(fn)
	if err := rt.L.PCall(0, 1, nil); err == nil || !strings.Contains(err.Error(), "base out of range") {
		t.Errorf("tonumber with base 37: %v, want base out of range", err)
	}
}

package luart

import (
	"io"
	"runtime"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// A string converted between its Go and Lua interfaces keeps its type, its value and its
// box, allocates nothing, and survives a collection with no other reference to it.
func TestStringBoxesAreShared(t *testing.T) {
	for _, s := range []string{"", "a", "lowebo", strings.Repeat("ß", 300)} {
		var v any = strings.Clone(s)
		lv := luaStringOf(v)
		if ls, ok := lv.(lua.LString); !ok || string(ls) != s {
			t.Fatalf("luaStringOf(%q) = %#v", s, lv)
		}
		back := goStringOf(lv)
		if gs, ok := back.(string); !ok || gs != s || back != v {
			t.Fatalf("goStringOf(luaStringOf(%q)) = %#v", s, back)
		}
		if n := testing.AllocsPerRun(100, func() { lv = luaStringOf(v); back = goStringOf(lv) }); n != 0 {
			t.Fatalf("%v allocations, want 0", n)
		}
	}
	kept := make([]lua.LValue, 100)
	for i := range kept {
		kept[i] = luaStringOf(any(strings.Repeat("x", i)))
	}
	runtime.GC()
	for i, lv := range kept {
		if string(lv.(lua.LString)) != strings.Repeat("x", i) {
			t.Fatalf("kept[%d] = %q after a collection", i, lv)
		}
	}
}

// A string value passed through a Lua value mapper and back is not boxed again either way.
func TestStringThroughValueMapperAllocatesNothing(t *testing.T) {
	rt, err := New(Options{Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.L.DoString(`return function(v) return v end`); err != nil {
		t.Fatal(err)
	}
	mapper := rt.valueMapper(rt.pop().(*lua.LFunction), false)
	rec := benchRecord
	n := testing.AllocsPerRun(100, func() {
		out, err := mapper(rec)
		if err != nil || out != rec.Value {
			t.Fatalf("mapper: %v, %v", out, err)
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per call, want 0", n)
	}
}

package luart

import (
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// TestUndeclaredArgumentsAreNotConverted: a callback that declares only the key never pays for
// converting a table-valued record, and one with ... still sees everything.
func TestUndeclaredArgumentsAreNotConverted(t *testing.T) {
	rt, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	compile := func(src string) *lua.LFunction {
		if err := rt.L.DoString("return " + src); err != nil {
			t.Fatal(err)
		}
		return rt.pop().(*lua.LFunction)
	}
	rec := pipeline.Record{Key: "k", Value: map[string]any{"a": "x", "b": int64(1), "c": []any{"y", "z"}, "d": map[string]any{"e": true}}}
	allocs := func(src string) float64 {
		p := rt.predicate(compile(src))
		return testing.AllocsPerRun(50, func() {
			if ok, err := p(rec); err != nil || !ok {
				t.Fatalf("%s: %v %v", src, ok, err)
			}
		})
	}
	keyOnly := allocs("function(k) return k == 'k' end")
	withValue := allocs("function(k, v) return v.a == 'x' end")
	if keyOnly+5 > withValue {
		t.Fatalf("function(k) allocates %v times per call, function(k, v) %v: the value was converted for a function that cannot see it", keyOnly, withValue)
	}
	p := rt.predicate(compile("function(...) local k, v = ... return v.d.e end"))
	if ok, err := p(rec); err != nil || !ok {
		t.Fatalf("a vararg function did not see the value: %v %v", ok, err)
	}
}

package luart

import (
	"io"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// BenchmarkLuaCallbackTwoStrings calls a filter predicate with a string key and a ~100-byte
// string value through the runtime's callback path: argument conversion, the record
// context, the time budget and the protected call. The target is ≤ 1 µs and ≤ 2 allocations.
func BenchmarkLuaCallbackTwoStrings(b *testing.B) {
	rt, err := New(Options{Stdout: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	if err := rt.L.DoString(`return function(k, v) return #v > #k end`); err != nil {
		b.Fatal(err)
	}
	fn, ok := rt.pop().(*lua.LFunction)
	if !ok {
		b.Fatal("the chunk did not return a function")
	}
	pred := rt.predicate(fn)
	rec := pipeline.Record{
		Key:   "lowebo",
		Value: "lowebo 0000012345 1700000000000 0123456789-0123456789-0123456789-0123456789-0123456789-01234567",
		Topic: "bench-in",
	}
	b.ReportAllocs()
	for b.Loop() {
		keep, err := pred(rec)
		if err != nil || !keep {
			b.Fatalf("predicate: %v, %v", keep, err)
		}
	}
}

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
	rec := benchRecord
	b.ReportAllocs()
	for b.Loop() {
		keep, err := pred(rec)
		if err != nil || !keep {
			b.Fatalf("predicate: %v, %v", keep, err)
		}
	}
}

// benchRecord is a record of the benchmark's input (bench/input.go): a word as key, a ~100-byte
// line holding it as value.
var benchRecord = pipeline.Record{
	Key:   "lowebo",
	Value: "lowebo 0000012345 1700000000000 0123456789-0123456789-0123456789-0123456789-0123456789-01234567",
	Topic: "bench-in",
}

// BenchmarkLuaCallbackWordCount runs bench/scripts/wordcount.lua's two callbacks per line:
// flatMapValues splitting a ~100-byte line into its words, and groupBy's key selector on
// each word.
func BenchmarkLuaCallbackWordCount(b *testing.B) {
	rt, err := New(Options{Stdout: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	if err := rt.L.DoString(`return function(line)
		local words = {}
		for w in line:lower():gmatch("%a+") do words[#words + 1] = w end
		return words
	end, function(_, word) return word end`); err != nil {
		b.Fatal(err)
	}
	selectorFn, ok1 := rt.pop().(*lua.LFunction)
	splitFn, ok2 := rt.pop().(*lua.LFunction)
	if !ok1 || !ok2 {
		b.Fatal("the chunk did not return two functions")
	}
	split, selector := rt.flatValueMapper(splitFn, false), rt.valueMapper(selectorFn, true)
	rec := benchRecord
	b.ReportAllocs()
	for b.Loop() {
		words, err := split(rec)
		if err != nil || len(words) != 1 {
			b.Fatalf("split: %v, %v", words, err)
		}
		for _, w := range words {
			out := rec
			out.Value = w
			if _, err := selector(out); err != nil {
				b.Fatal(err)
			}
		}
	}
}

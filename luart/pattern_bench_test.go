package luart

import (
	"io"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// benchLine is a value as the benchmark's generator writes it (bench/input.go): one word,
// its sequence number and timestamp, then digits up to 100 bytes.
const benchLine = "cabe 0000000042 1700000000000 0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123"

// BenchmarkGmatchWords calls the word-count benchmark's flatMapValues function
// (bench/scripts/wordcount.lua) on one 100-byte line through the runtime's callback path,
// with gopher-lua's gmatch (before issue #8) and with ours.
func BenchmarkGmatchWords(b *testing.B) {
	for _, impl := range []struct {
		name  string
		setup func(*Runtime)
	}{
		{"gopher-lua", func(rt *Runtime) {
			// Opening gopher-lua's string library again puts its gmatch back in the table
			// string values index.
			rt.L.Push(rt.L.NewFunction(lua.OpenString))
			rt.L.Call(0, 0)
		}},
		{"stoatflow", func(*Runtime) {}},
	} {
		b.Run(impl.name, func(b *testing.B) {
			rt, err := New(Options{Stdout: io.Discard})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			impl.setup(rt)
			if err := rt.L.DoString(`return function(line)
    local words = {}
    for w in line:lower():gmatch("%a+") do words[#words + 1] = w end
    return words
  end`); err != nil {
				b.Fatal(err)
			}
			fn, ok := rt.pop().(*lua.LFunction)
			if !ok {
				b.Fatal("the chunk did not return a function")
			}
			mapper := rt.flatValueMapper(fn, false)
			rec := pipeline.Record{Key: "cabe", Value: benchLine, Topic: "bench-in"}
			b.ReportAllocs()
			for b.Loop() {
				words, err := mapper(rec)
				if err != nil || len(words) != 1 || words[0] != "cabe" {
					b.Fatalf("flatMapValues: %v, %v", words, err)
				}
			}
		})
	}
}

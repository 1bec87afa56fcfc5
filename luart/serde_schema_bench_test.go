package luart

import (
	"io"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// benchLineAvsc is bench/scripts/line.avsc, the record of the stateless-avro scenario.
const benchLineAvsc = `{"type": "record", "name": "Line", "namespace": "stoatflow.bench", "fields": [
  {"name": "word", "type": "string"}, {"name": "seq", "type": "long"},
  {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}, {"name": "line", "type": "string"}]}`

// BenchmarkAvroThroughLua is the Lua-facing part of the stateless-avro scenario per record:
// a value read by the avro serde, handed to a mapValues function that upper-cases a field,
// and its result written by the avro serde: through Go values, or directly (the source's
// value undecoded, the function's table written as it is), as a script whose values only
// Lua reads and an avro sink writes has it.
func BenchmarkAvroThroughLua(b *testing.B) {
	f := schemas.NewFactory(schemas.Config{Registry: schemas.NewMemoryRegistry(), AutoRegister: true})
	rt, err := New(Options{Stdout: io.Discard, Schemas: f})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	serde, err := rt.schemaSerdeFor("avro", false, schemas.Spec{Schema: benchLineAvsc})
	if err != nil {
		b.Fatal(err)
	}
	data, err := serde.Serialize("bench-in", nil, map[string]any{"word": "lowebo", "seq": int64(12345), "ts": int64(1700000000000),
		"line": "lowebo 0000012345 1700000000000 0123456789-0123456789-0123456789-0123456789-0123456789-01234567"})
	if err != nil {
		b.Fatal(err)
	}
	if err := rt.L.DoString(`return function(v) v.line = v.line:upper() return v end`); err != nil {
		b.Fatal(err)
	}
	fn, ok := rt.pop().(*lua.LFunction)
	if !ok {
		b.Fatal("the chunk did not return a function")
	}
	for _, direct := range []bool{false, true} {
		name := "GoValues"
		if direct {
			name = "Direct"
		}
		mapper := rt.tableMapper(fn, false, &tableFlow{ok: direct})
		b.Run(name, func(b *testing.B) {
			serde.(*schemas.Serde).SetRawValues(direct)
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				v, err := serde.Deserialize("bench-in", nil, data)
				if err != nil {
					b.Fatal(err)
				}
				out, err := mapper(pipeline.Record{Value: v, Topic: "bench-in"})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := serde.Serialize("bench-out", nil, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

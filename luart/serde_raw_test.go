package luart

import (
	"math"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// allAvsc has a field of every Avro type and logical type docs/serdes.md maps.
const allAvsc = `{"type": "record", "name": "All", "namespace": "t", "fields": [
  {"name": "n", "type": "null"},
  {"name": "b", "type": "boolean"},
  {"name": "i", "type": "int"},
  {"name": "l", "type": "long"},
  {"name": "f", "type": "float"},
  {"name": "d", "type": "double"},
  {"name": "by", "type": "bytes"},
  {"name": "s", "type": "string"},
  {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
  {"name": "fx", "type": {"type": "fixed", "name": "F", "size": 2}},
  {"name": "arr", "type": {"type": "array", "items": ["null", "long"]}},
  {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "string"}}},
  {"name": "u", "type": ["null", "string", {"type": "record", "name": "Inner", "fields": [
    {"name": "x", "type": "long"}, {"name": "next", "type": ["null", "Inner"], "default": null}]}]},
  {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
  {"name": "day", "type": {"type": "int", "logicalType": "date"}},
  {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
  {"name": "decf", "type": {"type": "fixed", "name": "DF", "size": 8, "logicalType": "decimal", "precision": 12, "scale": 3}},
  {"name": "uuid", "type": {"type": "string", "logicalType": "uuid"}}]}`

func allValue(edit func(map[string]any)) map[string]any {
	v := map[string]any{
		"n": nil, "b": true, "i": int64(-7), "l": int64(12345), "f": 0.5, "d": -1.25, "by": []byte{0, 255, 7},
		"s": "stoat", "e": "B", "fx": []byte{1, 2}, "arr": []any{int64(1), nil, int64(3)},
		"m": map[string]any{"a": []any{"x", "y"}, "b": []any{}}, "u": nil,
		"ts": int64(1_700_000_000_123), "tsu": int64(1_700_000_000_123_456), "day": int64(19675),
		"dec": "-12.50", "decf": "123456789.125", "uuid": "7c9e6679-7425-40de-944b-e07fc1f90ae7",
	}
	if edit != nil {
		edit(v)
	}
	return v
}

// TestRawAvroTablesAreTheConvertedTables: the tables built straight from Avro bytes are the
// ones toLua made of the decoded Go values, for every Avro type: nulls inside records and
// arrays as stoat.null, arrays marked as arrays (empty ones too), 64-bit integers beyond 2^53
// as decimal strings, bytes, fixed and decimals as strings, enums as names, unions as their
// branch's value, nested and recursive records, maps, and a top-level null as nil.
func TestRawAvroTablesAreTheConvertedTables(t *testing.T) {
	for _, c := range []struct {
		name, schema string
		value        any
	}{
		{"every type", allAvsc, allValue(nil)},
		{"beyond 2^53 and empty", allAvsc, allValue(func(v map[string]any) {
			v["l"], v["ts"], v["tsu"] = int64(1)<<53+1, int64(math.MinInt64), int64(-(1<<53)-1)
			v["arr"], v["m"], v["s"], v["by"] = []any{}, map[string]any{}, "", []byte{}
			v["d"], v["f"] = math.Inf(-1), math.NaN()
		})},
		{"union branches", allAvsc, allValue(func(v map[string]any) { v["u"] = "a string branch" })},
		{"nested records", allAvsc, allValue(func(v map[string]any) {
			v["u"] = map[string]any{"x": int64(1), "next": map[string]any{"x": int64(9007199254740993), "next": nil}}
		})},
		{"top-level null", `["null", ` + allAvsc + `]`, nil},
		{"top-level union record", `["null", ` + allAvsc + `]`, allValue(nil)},
		{"top-level long", `"long"`, int64(1) << 60},
		{"top-level array", `{"type": "array", "items": {"type": "map", "values": ["null", "double"]}}`,
			[]any{map[string]any{"a": 1.5, "b": nil}, map[string]any{}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt, s := avroRuntime(t, c.schema)
			data, err := s.Serialize("t", nil, c.value)
			if err != nil {
				t.Fatal(err)
			}
			if data == nil {
				// A nil value is a tombstone; write the union's null branch instead.
				if data, err = s.Serialize("t", nil, map[string]any{"null": nil}); err != nil {
					t.Fatal(err)
				}
			}
			goValue, err := s.Deserialize("t", nil, data)
			if err != nil {
				t.Fatal(err)
			}
			want := rt.toLua(goValue)
			s.SetRawValues(true)
			raw, err := s.Deserialize("t", nil, data)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := raw.(*schemas.Raw); !ok && goValue != nil {
				t.Fatalf("with raw values the serde returned a %T", raw)
			}
			got := rt.toLua(raw)
			if msg := rt.sameLua(got, want, "value"); msg != "" {
				t.Fatal(msg)
			}
		})
	}
}

// avroRuntime is a runtime with an in-memory registry, and an avro serde of schema there.
func avroRuntime(t *testing.T, schema string) (*Runtime, *schemas.Serde) {
	t.Helper()
	rt, err := New(Options{Schemas: schemas.NewFactory(schemas.Config{Registry: schemas.NewMemoryRegistry(), AutoRegister: true})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	serde, err := rt.schemaSerdeFor("avro", false, schemas.Spec{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	return rt, serde.(*schemas.Serde)
}

// sameLua compares two Lua values deeply, metatables included; "" when they are the same.
func (rt *Runtime) sameLua(got, want lua.LValue, path string) string {
	if got.Type() != want.Type() {
		return path + ": " + got.Type().String() + " " + got.String() + ", want " + want.Type().String() + " " + want.String()
	}
	switch w := want.(type) {
	case lua.LNumber:
		g := got.(lua.LNumber)
		if g != w && !(math.IsNaN(float64(g)) && math.IsNaN(float64(w))) {
			return path + ": " + g.String() + ", want " + w.String()
		}
	case *lua.LTable:
		g := got.(*lua.LTable)
		if rt.L.GetMetatable(g) != rt.L.GetMetatable(w) {
			return path + ": the tables' metatables differ (an array marker?)"
		}
		var msgs []string
		count := 0
		w.ForEach(func(k, wv lua.LValue) {
			count++
			if m := rt.sameLua(g.RawGet(k), wv, path+"["+k.String()+"]"); m != "" {
				msgs = append(msgs, m)
			}
		})
		g.ForEach(func(lua.LValue, lua.LValue) { count-- })
		if count != 0 {
			msgs = append(msgs, path+": the tables have different keys")
		}
		return strings.Join(msgs, "; ")
	default:
		if got != want {
			return path + ": " + got.String() + ", want " + want.String()
		}
	}
	return ""
}

// TestRawAvroOnlyWhereOnlyLuaReads: an avro source hands on undecoded records only while
// every use of its stream is a Lua callback, a filter or peek passing them on, or a Schema
// Registry sink; any other use, of the stream or of one passed on from it, or the stream given
// to another method, has the source decode as before.
func TestRawAvroOnlyWhereOnlyLuaReads(t *testing.T) {
	const head = "local s = require(\"stoat\")\nlocal b = s.builder()\nlocal card = s.avro({ schema = \"card.avsc\" })\n" +
		"local st = b:stream(\"in\", { valueSerde = \"avro\" })\n"
	for _, c := range []struct {
		name, body string
		raw        bool
	}{
		{"stateless into avro", `st:filter(function(k) return #k > 4 end):peek(function(k, v) end)
  :mapValues(function(v) return v end):to("out", { valueSerde = card })`, true},
		{"every Lua callback", `st:foreach(function(k, v) end)
st:map(function(k, v) return k, v end):to("o1")
st:flatMap(function(k, v) return {} end):to("o2")
st:flatMapValues(function(v) return {} end):to("o3")
st:filterNot(function(k, v) return false end):to("o4", { valueSerde = "avro" })`, true},
		{"a sink of another serde", `st:filter(function(k) return true end):to("out", { valueSerde = "json" })`, false},
		{"a sink of the default serde", `st:to("out")`, false},
		{"a store", `st:groupByKey():count()`, false},
		{"print", `st:filter(function(k) return true end):print()`, false},
		{"merged into another", `b:stream("other"):merge(st):to("out")`, false},
		{"merging another", `st:merge(b:stream("other")):to("out", { valueSerde = card })`, false},
		{"toTable", `st:toTable()`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt, _, err := loadWith(t, Options{Schemas: schemas.NewFactory(schemas.Config{Registry: schemas.NewMemoryRegistry(), AutoRegister: true})},
				head+c.body+"\nreturn b", map[string]string{"card.avsc": cardAvsc})
			if err != nil {
				t.Fatal(err)
			}
			// The script's one avro source is the serde of every stream on record.
			var src *schemas.Serde
			for _, s := range rt.rawSources {
				src = s
			}
			if src == nil {
				t.Fatal("no avro source on record")
			}
			w, err := rt.schemaSerdeFor("avro", false, schemas.Spec{Schema: cardAvsc})
			if err != nil {
				t.Fatal(err)
			}
			data, err := w.Serialize("in", nil, map[string]any{"number": "4111", "serial": int64(1)})
			if err != nil {
				t.Fatal(err)
			}
			v, err := src.Deserialize("in", nil, data)
			if err != nil {
				t.Fatal(err)
			}
			if _, raw := v.(*schemas.Raw); raw != c.raw {
				t.Fatalf("the source read a %T; want raw values %v", v, c.raw)
			}
		})
	}
}

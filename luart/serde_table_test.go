package luart

import (
	"fmt"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// lineAvsc is a small record with a nullable field and a map, for the tables below.
const lineAvsc = `{"type": "record", "name": "Line", "namespace": "t", "fields": [
  {"name": "word", "type": "string"}, {"name": "seq", "type": "long"}, {"name": "note", "type": ["null", "string"], "default": null},
  {"name": "tags", "type": {"type": "array", "items": "string"}}, {"name": "attrs", "type": {"type": "map", "values": ["null", "long", "string"]}}]}`

// TestLuaTablesWriteAsTheirGoValues: a table a mapValues function hands to an avro sink as it
// is writes the very bytes its Go values (fromLua) write, and fails with the very error they
// fail with (the mapValues function's when the table does not convert), for every Avro type
// and for tables only fromLua can judge (numeric keys, marked arrays with other keys, cycles).
func TestLuaTablesWriteAsTheirGoValues(t *testing.T) {
	for _, c := range []struct {
		schema, table string
		// convert: only converting the table judges it (written, but not straight).
		convert bool
	}{
		{allAvsc, `{n = s.null, b = true, i = -7, l = 12345, f = 0.5, d = -1.25, by = "\0\255", s = "stoat", e = "B", fx = "ab",
  arr = {1, s.null, 3}, m = {a = {"x", "y"}, b = s.array()}, u = s.null, ts = 1700000000123, tsu = 1700000000123456, day = 19675,
  dec = "-12.50", decf = "123456789.125", uuid = "7c9e6679-7425-40de-944b-e07fc1f90ae7"}`, false},
		{allAvsc, `{n = s.null, b = false, i = 2147483647, l = "9007199254740993", f = 1e300, d = 0/0, by = "", s = "", e = "A", fx = "zz",
  arr = {}, m = {}, u = {x = 1, next = {x = -9007199254740993, next = s.null}}, ts = -1, tsu = "-9223372036854775808", day = 0,
  dec = 12.5, decf = 7, uuid = ""}`, false},
		{allAvsc, `{b = true, i = 1, l = 1, f = 1, d = 1, by = "", s = "", e = "A", fx = "zz", arr = {}, m = {}, u = {["t.Inner"] = {x = 1}},
  ts = 1, tsu = 1, day = 1, dec = "0", decf = "0", uuid = "u"}`, false},
		{allAvsc, `{b = true, i = 1, l = 1, f = 1, d = 1, by = "", s = "", e = "A", fx = "zz", arr = {}, m = {}, u = {Inner = {x = 2}},
  ts = 1, tsu = 1, day = 1, dec = "0", decf = "0", uuid = "u"}`, false},
		{allAvsc, `{b = true, i = 1, l = 1, f = 1, d = 1, by = "", s = "", e = "A", fx = "zz", arr = {}, m = {}, u = "a string",
  ts = 1, tsu = 1, day = 1, dec = "0", decf = "0", uuid = "u"}`, false},
		{allAvsc, `{b = 1, i = 1.5, l = 2^63, s = 5, e = "C", fx = "abc", dec = "1.234", decf = true}`, false},
		{allAvsc, `{i = 2147483648}`, false},
		{allAvsc, `{n = 0}`, false},
		{lineAvsc, `{word = "w", seq = 1, tags = {"a"}, attrs = {x = 1, y = "2", z = s.null}}`, false},
		{lineAvsc, `{word = "w", seq = 1, tags = {}, attrs = {}, extra = 1, other = 2}`, false},
		{lineAvsc, `{word = "w", seq = 1.5, tags = {}, attrs = {}}`, false},
		{lineAvsc, `{word = "w", seq = 1, note = "n", tags = s.array(), attrs = {[1] = 5, [3] = 6}}`, true},
		{lineAvsc, `{word = "w", seq = 1, tags = {"a", nil, "c"}, attrs = {}}`, false},
		{lineAvsc, `{word = "w", seq = 1, tags = {[1] = "a", x = "b"}, attrs = {}}`, false},
		{lineAvsc, `(function() local a = s.array() a.x = 1 return {word = "w", seq = 1, tags = a, attrs = {}} end)()`, true},
		{lineAvsc, `{word = "w", seq = 1, tags = {}, attrs = {[true] = 1}}`, false},
		{lineAvsc, `{word = "w", seq = 1, tags = {}, attrs = {f = print}}`, false},
		{lineAvsc, `{word = "w", seq = 1, tags = {}, attrs = {}, [1] = "x"}`, false},
		{lineAvsc, `{word = "w"}`, false},
		{lineAvsc, `{"w", 1}`, false},
		{lineAvsc, `{}`, false},
		{`{"type": "record", "name": "R", "fields": [{"name": "r", "type": ["null", "R"]}]}`,
			`(function() local t = {} t.r = t return t end)()`, false},
		{`{"type": "record", "name": "R", "fields": [{"name": "r", "type": ["null", "R"]}]}`,
			`(function() local t = {r = s.null} for i = 1, 95 do t = {r = t} end return t end)()`, true},
		{`{"type": "array", "items": ["long", "string", {"type": "map", "values": "long"}]}`, `{1, "a", {x = 1}, {[2] = 3}, 2.5}`, false},
		{`{"type": "map", "values": "long"}`, `{b = 2, a = 1, c = "3"}`, false},
	} {
		t.Run(c.table, func(t *testing.T) {
			rt, serde := avroRuntime(t, c.schema)
			rt.L.SetGlobal("s", rt.stoatModule())
			if err := rt.L.DoString(`return function() return ` + c.table + ` end`); err != nil {
				t.Fatal(err)
			}
			fn := rt.pop().(*lua.LFunction)
			converted := false
			write := func(flow bool) string {
				v, err := rt.tableMapper(fn, false, &tableFlow{ok: flow})(pipeline.Record{})
				if err != nil {
					return "mapValues: " + err.Error()
				}
				if _, ok := v.(*luaTable); ok != flow {
					t.Fatalf("the mapper returned a %T", v)
				}
				if flow {
					converted = serializePanics(serde, unconvertible{v.(*luaTable)})
				}
				b, err := serde.Serialize("t", nil, v)
				if err != nil {
					return "sink: " + err.Error()
				}
				return fmt.Sprintf("% x", b)
			}
			want := write(false)
			got := write(true)
			if got != want &&
				// Where the function's result does not convert, the sink reports it.
				got != "sink: "+strings.TrimPrefix(want, "mapValues: ") {
				t.Fatalf("straight from the table:\n%s\nwant\n%s", got, want)
			}
			if written := !strings.Contains(want, ":"); written && converted != c.convert {
				t.Fatalf("the table was converted first: %v, want %v", converted, c.convert)
			}
		})
	}
}

// unconvertible is a luaTable whose conversion to Go values panics: what a sink writes from
// it, it wrote straight from the table.
type unconvertible struct{ *luaTable }

func (unconvertible) Value() (any, error) { panic("converted") }

func serializePanics(s pipeline.Serde, v any) (panicked bool) {
	defer func() { panicked = recover() != nil }()
	_, _ = s.Serialize("t", nil, v)
	return false
}

// TestLuaTablesOnlyToSchemaSinks: a mapValues function hands its tables on as they are only
// while every use of its stream is a Schema Registry sink without a Lua partitioner or topic
// extractor.
func TestLuaTablesOnlyToSchemaSinks(t *testing.T) {
	const head = "local s = require(\"stoat\")\nlocal b = s.builder()\nlocal card = s.avro({ schema = \"card.avsc\" })\n" +
		"local mv = b:stream(\"in\"):mapValues(function(v) return { number = v, serial = 1 } end)\n"
	for _, c := range []struct {
		name, body string
		tables     bool
	}{
		{"into avro", `mv:to("out", { valueSerde = card })`, true},
		{"into two avro sinks", `mv:to("o1", { valueSerde = card })
mv:to("o2", { valueSerde = "avro" })`, true},
		{"a sink of another serde", `mv:to("out", { valueSerde = "json" })`, false},
		{"a partitioner", `mv:to("out", { valueSerde = card, partitioner = function() return 0 end })`, false},
		{"a topic extractor", `mv:to(function() return "out" end, { valueSerde = card })`, false},
		{"a filter", `mv:filter(function() return true end):to("out", { valueSerde = card })`, false},
		{"print", `mv:print()`, false},
		{"merged", `b:stream("x"):merge(mv):to("out", { valueSerde = card })`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt, _, err := loadWith(t, Options{Schemas: schemas.NewFactory(schemas.Config{Registry: schemas.NewMemoryRegistry(), AutoRegister: true})},
				head+c.body+"\nreturn b", map[string]string{"card.avsc": cardAvsc})
			if err != nil {
				t.Fatal(err)
			}
			if len(rt.tableStreams) != 1 {
				t.Fatalf("%d mapValues streams on record, want 1", len(rt.tableStreams))
			}
			for _, f := range rt.tableStreams {
				if f.ok != c.tables {
					t.Fatalf("tables handed on: %v, want %v", f.ok, c.tables)
				}
			}
		})
	}
}

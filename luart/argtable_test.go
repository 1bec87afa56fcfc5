package luart

import (
	"fmt"
	"io"
	"slices"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// TestArgumentTablesKeptOnlyWhereTheyStayInTheCall: a function's argument table is refilled
// for the next call only where the function can neither keep it nor tell it apart from a new
// one.
func TestArgumentTablesKeptOnlyWhereTheyStayInTheCall(t *testing.T) {
	rt, err := New(Options{Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	cases := []struct {
		src     string
		reg     int
		kept    bool
		written []string
	}{
		{"function(v) v.line = v.line:upper() return v end", 0, true, []string{"line", "upper"}},
		{"function(wk, n) return wk.key .. '@' .. string.format('%d', wk.window.start), n end", 0, true, nil},
		{"function(k, v) return #k > 4 and v.seq > 3 end", 1, true, nil},
		{"function(v) local t = {} t.a = v.a if v.b then t.b = v.b[1] end return t end", 0, true, nil},
		{"function(v) v.a, v.b = v.b, v.a v.c = nil return v end", 0, true, []string{"a", "b", "c"}},
		{"function(v) for i = 1, 3 do v.n = i end return v end", 0, true, []string{"n"}},
		{"function(v, r) return r.offset end", 0, true, nil},
		// Each of these could keep the table, tell it apart, or add keys without bound.
		{"function(v) kept = v return v end", 0, false, nil},
		{"function(v) local t = {v} return t end", 0, false, nil},
		{"function(v) local t = {x = v} return t end", 0, false, nil},
		{"function(v) return f(v) end", 0, false, nil},
		{"function(v) print(v) end", 0, false, nil},
		{"function(v) return tostring(v) end", 0, false, nil},
		{"function(v) local w = v return w end", 0, false, nil},
		{"function(v) return function() return v end end", 0, false, nil},
		{"function(v) return v == last end", 0, false, nil},
		{"function(v) for k in pairs(v) do end end", 0, false, nil},
		{"function(v) return #v end", 0, false, nil},
		{"function(v) v[v.key] = 1 return v end", 0, false, nil},
		{"function(v) v[1] = 1 return v end", 0, false, nil},
		{"function(v) v.self = v return v end", 0, false, nil},
		{"function(v) v = {} return v end", 0, false, nil},
		{"function(v) return v:method() end", 0, false, nil},
		{"function(v) setmetatable(v, {}) end", 0, false, nil},
		{"function(v) return v .. '' end", 0, false, nil},
		{"function(v) return v and 1 end", 0, false, nil},
		{"function(...) local v = ... return v.a end", 0, false, nil},
		{"function(k) return k end", 1, false, nil},
	}
	for _, c := range cases {
		if err := rt.L.DoString("return " + c.src); err != nil {
			t.Fatal(err)
		}
		fn := rt.pop().(*lua.LFunction)
		_, a := argUse(fn, c.reg)
		if (a != nil) != c.kept {
			t.Errorf("%s: argument %d kept %v, want %v", c.src, c.reg, a != nil, c.kept)
			continue
		}
		if a != nil && !slices.Equal(a.written, c.written) {
			t.Errorf("%s: written %q, want %q", c.src, a.written, c.written)
		}
	}
	if _, a := argUse(rt.L.NewFunction(func(*lua.LState) int { return 0 }), 0); a != nil {
		t.Error("a Go function's argument is kept")
	}
	// A windowed key's window table is kept too where the function only reads through it.
	for src, want := range map[string]bool{
		"function(wk, n) return wk.key .. '@' .. string.format('%d', wk.window.start), n end": true,
		"function(wk) return wk.window['end'] - wk.window.start end":                          true,
		"function(wk) local w = wk.window return w.start end":                                 false,
		"function(wk) return wk.window end":                                                   false,
		"function(wk) last = wk.window.start wk.window.start = 0 end":                         false,
		"function(wk, f) local w = wk[f] return w.start end":                                  false,
	} {
		if err := rt.L.DoString("return " + src); err != nil {
			t.Fatal(err)
		}
		if _, a := argUse(rt.pop().(*lua.LFunction), 0); a == nil || a.keepWindow != want {
			t.Errorf("%s: window kept %v, want %v", src, a != nil && a.keepWindow, want)
		}
	}
}

// TestKeptArgumentTablesAreNewTablesToTheFunction: a function whose argument table is kept
// sees, in every call, exactly the table a new conversion makes (fields it assigned or
// removed in an earlier call back as the record has them, records of two schemas in turn),
// and returns what it would have returned with new tables.
func TestKeptArgumentTablesAreNewTablesToTheFunction(t *testing.T) {
	rt, all := avroRuntime(t, allAvsc)
	card, err := rt.schemaSerdeFor("avro", false, schemas.Spec{Schema: cardAvsc})
	if err != nil {
		t.Fatal(err)
	}
	var records []pipeline.Record
	for i := range 6 {
		value := any(map[string]any{"number": fmt.Sprint("card-", i), "serial": int64(i)})
		s := card
		if i%3 != 2 {
			value, s = allValue(func(v map[string]any) { v["l"], v["s"] = int64(i), fmt.Sprint("s", i) }), all
		}
		data, err := s.Serialize("t", nil, value)
		if err != nil {
			t.Fatal(err)
		}
		s.(*schemas.Serde).SetRawValues(true)
		raw, err := s.Deserialize("t", nil, data)
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, pipeline.Record{Key: pipeline.Windowed{Key: fmt.Sprint("k", i), Start: int64(i), End: int64(i + 10)}, Value: raw})
	}
	if err := rt.L.DoString(`seen = {}
	return function(wk, v)
		seen[#seen + 1] = {extra = v.extra, s = v.s, number = v.number, tag = wk.tag, key = wk.key, start = wk.window.start}
		v.extra, v.s, v.number = v.l or v.serial, nil, nil
		wk.tag, wk.key = wk.key, nil
		return v
	end`); err != nil {
		t.Fatal(err)
	}
	fn := rt.pop().(*lua.LFunction)
	kept := rt.valueMapper(fn, true)
	fresh := newKVFunc(fn, true)
	if fresh.key == nil || fresh.value == nil {
		t.Fatal("the function's arguments are not kept")
	}
	fresh.key, fresh.value = nil, nil
	for i, rec := range records {
		got, err := kept(rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.callKV(fresh, &rec, 1); err != nil {
			t.Fatal(err)
		}
		want, err := rt.fromLua(rt.pop())
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
			t.Fatalf("record %d: with a kept table %#v, with new tables %#v", i, got, want)
		}
	}
	seen, err := rt.fromLua(rt.L.GetGlobal("seen"))
	if err != nil {
		t.Fatal(err)
	}
	list := seen.([]any)
	for i := 0; i < len(list); i += 2 {
		if got, want := fmt.Sprintf("%#v", list[i]), fmt.Sprintf("%#v", list[i+1]); got != want {
			t.Fatalf("record %d: the function saw %s in a kept table, %s in new tables", i/2, got, want)
		}
	}
	// One argument given values of both shapes in turn is refilled from empty at each change.
	a := &argTable{}
	for i, v := range []any{records[0].Value, records[0].Key, records[2].Value, records[1].Value, records[1].Key} {
		got := rt.argToLua(v, a)
		a.release()
		if msg := rt.sameLua(got, rt.toLua(v), fmt.Sprint("argument ", i)); msg != "" {
			t.Fatal(msg)
		}
	}
	// A call in progress keeps its table: a call that starts meanwhile gets a new one.
	if first := rt.argToLua(records[0].Value, a); rt.argToLua(records[0].Value, a) == first {
		t.Fatal("two calls in progress share one table")
	}
}

// TestKeptAvroTableAllocatesLess: the Avro record of the stateless-avro benchmark through
// its mapValues function allocates for its field values, not for a new table's keys.
func TestKeptAvroTableAllocatesLess(t *testing.T) {
	rt, s := avroRuntime(t, benchLineAvsc)
	data, err := s.Serialize("t", nil, map[string]any{"word": "lowebo", "seq": int64(12345), "ts": int64(1700000000000), "line": "lowebo 0000012345"})
	if err != nil {
		t.Fatal(err)
	}
	s.SetRawValues(true)
	if err := rt.L.DoString(`return function(v) v.line = v.line:upper() return v end`); err != nil {
		t.Fatal(err)
	}
	mapper := rt.tableMapper(rt.pop().(*lua.LFunction), false, &tableFlow{ok: true})
	allocs := testing.AllocsPerRun(100, func() {
		v, err := s.Deserialize("t", nil, data)
		if err != nil {
			t.Fatal(err)
		}
		out, err := mapper(pipeline.Record{Value: v, Topic: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Serialize("t", nil, out); err != nil {
			t.Fatal(err)
		}
	})
	// Checked bytes and their Raw (2), the four field values (4), upper (2), the written
	// bytes (1); a new table took 16 more, and handing it on one.
	if allocs > 9 {
		t.Fatalf("%v allocations per record", allocs)
	}
}

// TestUnreadArgumentsAreNotConverted: an argument the function's code never reads (the word
// count's groupBy(function(_, word) return word end)) is not converted, and one read only by
// a closure or through ... still is.
func TestUnreadArgumentsAreNotConverted(t *testing.T) {
	rt, err := New(Options{Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	mapper := func(src string) pipeline.ValueMapper {
		if err := rt.L.DoString("return " + src); err != nil {
			t.Fatal(err)
		}
		return rt.valueMapper(rt.pop().(*lua.LFunction), true)
	}
	rec := pipeline.Record{Key: "lowebo", Value: "word", Offset: 7}
	for src, want := range map[string]any{
		"function(_, word) return word end":                          "word",
		"function(k, v) return (function() return k .. v end)() end": "loweboword",
		"function(k, ...) return k .. select('#', ...) end":          "lowebo2",
		"function(k, v, r) return r.offset end":                      int64(7),
	} {
		got, err := mapper(src)(rec)
		if err != nil || got != want {
			t.Errorf("%s: %#v, %v; want %#v", src, got, err, want)
		}
	}
	selector := mapper("function(_, word) return word end")
	if allocs := testing.AllocsPerRun(100, func() { _, _ = selector(rec) }); allocs > 2 {
		t.Fatalf("function(_, word) allocates %v times per call: the unread key was converted", allocs)
	}
}

// TestKeptAvroTableWritesAsANewTable: a mapValues function's kept record table, handed on to
// an avro sink, is written to the same bytes, or refused with the same error, as a new table
// the function changed alike: fields assigned, removed (nullable or not), added.
func TestKeptAvroTableWritesAsANewTable(t *testing.T) {
	line := map[string]any{"word": "lowebo", "seq": int64(12345), "ts": int64(1700000000000), "line": "lowebo 0000012345"}
	for _, c := range []struct {
		schema string
		value  any
		src    []string
	}{
		{benchLineAvsc, line, []string{
			"function(v) v.line = v.line:upper() return v end",
			"function(v) v.extra = 1 return v end",
			"function(v) v.line = nil return v end",
			"function(v) v.line, v.extra = nil, 2 return v end",
			"function(v) v.extra = 1 v.extra = nil v.seq = v.seq + 1 return v end",
		}},
		{allAvsc, allValue(nil), []string{
			"function(v) v.u = nil return v end",
			"function(v) v.u, v.n = nil, nil return v end",
			"function(v) v.u, v.x = nil, 1 return v end",
		}},
	} {
		rt, s := avroRuntime(t, c.schema)
		data, err := s.Serialize("t", nil, c.value)
		if err != nil {
			t.Fatal(err)
		}
		s.SetRawValues(true)
		for _, src := range c.src {
			if err := rt.L.DoString("return " + src); err != nil {
				t.Fatal(err)
			}
			fn := rt.pop().(*lua.LFunction)
			mapper := rt.tableMapper(fn, false, &tableFlow{ok: true})
			fresh := newKVFunc(fn, false)
			fresh.value = nil
			for round := range 2 {
				raw, err := s.Deserialize("t", nil, data)
				if err != nil {
					t.Fatal(err)
				}
				rec := pipeline.Record{Value: raw, Topic: "t"}
				out, err := mapper(rec)
				if err != nil {
					t.Fatal(err)
				}
				kept := out.(*luaTable).kept
				if kept == nil {
					t.Fatalf("%s: the table handed on is not the kept one", src)
				}
				walked := 0
				for k, _ := kept.t.Next(lua.LNil); k != lua.LNil; k, _ = kept.t.Next(k) {
					walked++
				}
				if kept.entries() != walked {
					t.Fatalf("%s: %d entries counted, %d in the table", src, kept.entries(), walked)
				}
				got, gotErr := s.Serialize("t", nil, out)
				if err := rt.callKV(fresh, &rec, 1); err != nil {
					t.Fatal(err)
				}
				want, wantErr := s.Serialize("t", nil, &luaTable{rt: rt, t: rt.pop().(*lua.LTable), fn: fn})
				if fmt.Sprint(got, gotErr) != fmt.Sprint(want, wantErr) {
					t.Fatalf("%s, record %d: kept table written as %v, %v; a new one as %v, %v", src, round, got, gotErr, want, wantErr)
				}
			}
		}
	}
}

// TestKeptWindowedKeyAllocatesLess: the windowed benchmark's map(function(wk, n) ...) gets
// its windowed key without new tables.
func TestKeptWindowedKeyAllocatesLess(t *testing.T) {
	rt, err := New(Options{Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.L.DoString(`return function(wk, n) return wk.key .. "@" .. string.format("%d", wk.window.start), n end`); err != nil {
		t.Fatal(err)
	}
	mapper := rt.keyValueMapper(rt.pop().(*lua.LFunction))
	rec := pipeline.Record{Key: pipeline.Windowed{Key: "lowebo", Start: 1_700_000_000_000, End: 1_700_000_010_000}, Value: int64(3)}
	allocs := testing.AllocsPerRun(100, func() {
		k, v, err := mapper(rec)
		if err != nil || k != "lowebo@1700000000000" || v != int64(3) {
			t.Fatalf("%v %v %v", k, v, err)
		}
	})
	// The concatenation, string.format, the numbers and the returned key; new tables took 7
	// more.
	if allocs > 14 {
		t.Fatalf("%v allocations per call", allocs)
	}
}

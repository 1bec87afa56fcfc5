package luart

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// An avro source whose values reach only Lua callbacks and Schema Registry sinks hands them
// on undecoded (*schemas.Raw, its bytes checked at the source so that a bad record is still a
// deserialization error there), and each callback builds its table straight from the bytes:
// no Go map in between. The script's use of the stream decides: filter, filterNot and peek
// pass the values on, mapValues, map, flatMap, flatMapValues and foreach give them to Lua
// only, and to() with a Schema Registry value serde writes them; any other use of the stream
// (or of a stream passed on from it), anywhere in the script, has the source decode as
// before. The topology runs only once the script is loaded, so no record sees the choice
// change.

// rawSafeMethods are the KStream methods that keep a stream's values undecoded (see above);
// to() checks its serde too.
var rawSafeMethods = map[string]bool{
	"filter": true, "filterNot": true, "peek": true, "to": true,
	"mapValues": true, "map": true, "flatMap": true, "flatMapValues": true, "foreach": true,
}

// rawSourceFor starts the undecoded values of a new stream whose value serde is avro.
func (rt *Runtime) rawSourceFor(ks *pipeline.KStream, value pipeline.Serde) {
	if s, ok := value.(*schemas.Serde); ok && s.Name() == "avro" {
		s.SetRawValues(true)
		rt.rawSources[ks] = s
	}
}

// passRaw gives out the undecoded values of in, for methods that forward in's values.
func (rt *Runtime) passRaw(in, out *pipeline.KStream) {
	if s := rt.rawSources[in]; s != nil {
		rt.rawSources[out] = s
	}
}

// endRaw has the source of ks, if its values are undecoded, decode them.
func (rt *Runtime) endRaw(ks *pipeline.KStream) {
	if s := rt.rawSources[ks]; s != nil {
		s.SetRawValues(false)
	}
}

// endRawArgs ends the undecoded values (and the tables, serde_table.go) of every stream a
// DSL method is given, except its receiver when the method keeps them.
func (rt *Runtime) endRawArgs(L *lua.LState, typeName, method string) {
	for i := 1; i <= L.GetTop(); i++ {
		ud, ok := L.Get(i).(*lua.LUserData)
		if !ok {
			continue
		}
		ks, ok := ud.Value.(*pipeline.KStream)
		if !ok {
			continue
		}
		receiver := i == 1 && typeName == "KStream"
		if !receiver || !rawSafeMethods[method] {
			rt.endRaw(ks)
		}
		if !receiver || method != "to" {
			rt.endTables(ks)
		}
	}
}

// rawToLua builds the Lua table of an undecoded Avro record.
func (rt *Runtime) rawToLua(r *schemas.Raw) lua.LValue {
	return rt.buildRaw(r, luaBuilder{rt})
}

func (rt *Runtime) buildRaw(r *schemas.Raw, b schemas.Builder[lua.LValue]) lua.LValue {
	v, err := schemas.Build(r, b)
	if err != nil {
		// The source checked these very bytes with the same decoder.
		panic(fmt.Sprintf("an Avro record checked at its source does not decode: %v", err))
	}
	return v
}

// luaBuilder builds the Lua values toLua makes of the Go values of the same record.
type luaBuilder struct{ rt *Runtime }

func (b luaBuilder) Null() lua.LValue                         { return b.rt.null }
func (b luaBuilder) Bool(v bool) lua.LValue                   { return lua.LBool(v) }
func (b luaBuilder) Long(i int64) lua.LValue                  { return intToLua(i) }
func (b luaBuilder) Double(f float64) lua.LValue              { return lua.LNumber(f) }
func (b luaBuilder) String(s string) lua.LValue               { return lua.LString(s) }
func (b luaBuilder) Bytes(v []byte) lua.LValue                { return lua.LString(v) }
func (b luaBuilder) Record(size int) lua.LValue               { return b.rt.L.CreateTable(0, size) }
func (b luaBuilder) Map(size int) lua.LValue                  { return b.rt.L.CreateTable(0, size) }
func (b luaBuilder) Set(m lua.LValue, k string, v lua.LValue) { m.(*lua.LTable).RawSetString(k, v) }

func (b luaBuilder) Array(items []lua.LValue) lua.LValue {
	t := b.rt.L.CreateTable(len(items), 0)
	for _, e := range items {
		t.Append(e)
	}
	b.rt.L.SetMetatable(t, b.rt.arrayMT)
	return t
}

// recordBuilder is luaBuilder building the first record it is asked for (the top-level one,
// for a record schema) into top, when top is set.
type recordBuilder struct {
	luaBuilder
	top *lua.LTable
}

func (b *recordBuilder) Record(size int) lua.LValue {
	if t := b.top; t != nil {
		b.top = nil
		return t
	}
	return b.luaBuilder.Record(size)
}

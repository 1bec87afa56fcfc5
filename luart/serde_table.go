package luart

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// A mapValues function whose results only go to Schema Registry sinks hands its tables on as
// they are (luaTable), and an avro sink writes them straight from the table (luaValues): no Go
// map in between. The sink writes them at once, in the same call, so the tables cannot change
// meanwhile. Any other use of the mapValues stream (a filter, a store, a sink of another serde,
// a Lua partitioner or topic extractor, which would see the table) converts as before.

// tableFlow is whether the results of one mapValues function stay Lua tables.
type tableFlow struct{ ok bool }

// luaTable is a table a mapValues function returned, on its way to a Schema Registry sink.
type luaTable struct {
	rt *Runtime
	t  *lua.LTable
	fn *lua.LFunction
	// kept is the argTable t is the table of, when the function returned its argument's
	// kept table.
	kept *argTable
}

// AppendAvro implements schemas.Foreign.
func (v *luaTable) AppendAvro(dst []byte, s schemas.AvroSchema) ([]byte, error) {
	if v.kept != nil {
		return schemas.AppendAvro(dst, s, lua.LValue(v.t), schemas.Values[lua.LValue](&v.kept.values))
	}
	return schemas.AppendAvro(dst, s, lua.LValue(v.t), schemas.Values[lua.LValue](luaValues{rt: v.rt}))
}

// Value implements schemas.Foreign: the Go values, with the error the mapValues function
// would have had.
func (v *luaTable) Value() (any, error) {
	return v.rt.returnedValue(v.fn, v.t)
}

// endTables has the mapValues function of ks convert its results, if it hands on tables.
func (rt *Runtime) endTables(ks *pipeline.KStream) {
	if f := rt.tableStreams[ks]; f != nil {
		f.ok = false
	}
}

// luaValues reads Lua values for the Avro encoder as fromLua would convert them
// (schemas.Values); whatever it cannot judge so (tables with keys other than strings, or
// holding more than a record's fields) it leaves to fromLua with ErrConvertFirst.
type luaValues struct {
	rt *Runtime
	// kept, when set, is the argTable of a refilled Avro record, whose entries it counts
	// without walking the table.
	kept *argTable
}

var errNotWritable = errors.New("not writable")

func (lv luaValues) IsNull(v lua.LValue) bool { return v == lua.LNil || v == lv.rt.null }

func (lv luaValues) Bool(v lua.LValue) (bool, bool) {
	b, ok := v.(lua.LBool)
	return bool(b), ok
}

// Int reads as toInt64 reads what fromLua makes of v: an integral number in 64-bit range, or
// a decimal string.
func (lv luaValues) Int(v lua.LValue) (int64, error) {
	switch x := v.(type) {
	case lua.LNumber:
		if f := float64(x); f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
			return int64(f), nil
		}
	case lua.LString:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i, nil
		}
	}
	return 0, errNotWritable
}

func (lv luaValues) Float(v lua.LValue) (float64, error) {
	if x, ok := v.(lua.LNumber); ok {
		return float64(x), nil
	}
	return 0, errNotWritable
}

func (lv luaValues) AppendText(dst []byte, v lua.LValue) ([]byte, bool) {
	s, ok := v.(lua.LString)
	if !ok {
		return dst, false
	}
	return append(binary.AppendVarint(dst, int64(len(s))), s...), true
}

func (lv luaValues) Bytes(v lua.LValue) ([]byte, bool) {
	s, ok := v.(lua.LString)
	return []byte(s), ok
}

func (lv luaValues) Symbol(v lua.LValue) (string, bool) {
	s, ok := v.(lua.LString)
	return string(s), ok
}

// DecimalText is the text of a string, or of a number as fromLua converts it: an integer
// when integral within ±9.2e18, else a float.
func (lv luaValues) DecimalText(v lua.LValue) (string, error) {
	switch x := v.(type) {
	case lua.LString:
		return string(x), nil
	case lua.LNumber:
		if f := float64(x); f == math.Trunc(f) && f >= -9.2e18 && f <= 9.2e18 {
			return strconv.FormatInt(int64(f), 10), nil
		}
		return strconv.FormatFloat(float64(x), 'f', -1, 64), nil
	}
	return "", errNotWritable
}

// tableKind is what fromLua makes of t: an array of n items, or a map of n entries.
func (lv luaValues) tableKind(t *lua.LTable) (n int, array bool, err error) {
	if k := lv.kept; k != nil && t == k.t && k.schema.IsRecord() {
		// Only the record's fields and the function's constant keys can be there.
		return k.entries(), false, nil
	}
	n = t.Len()
	marked := lv.rt.L.GetMetatable(t) == lv.rt.arrayMT
	count, strings := 0, true
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		count++
		if _, ok := k.(lua.LString); !ok {
			strings = false
		}
	}
	switch {
	case marked && count == n, !marked && n > 0 && count == n:
		return n, true, nil
	case !marked && strings:
		return count, false, nil
	}
	return 0, false, schemas.ErrConvertFirst
}

func (lv luaValues) Array(v lua.LValue) (int, bool, error) {
	t, ok := v.(*lua.LTable)
	if !ok {
		return 0, false, nil
	}
	n, array, err := lv.tableKind(t)
	return n, err == nil && (array || n == 0), err
}

func (lv luaValues) Index(v lua.LValue, i int) lua.LValue { return v.(*lua.LTable).RawGetInt(i + 1) }

func (lv luaValues) Fields(v lua.LValue) (int, bool, error) {
	t, ok := v.(*lua.LTable)
	if !ok {
		return 0, false, nil
	}
	n, array, err := lv.tableKind(t)
	if array {
		// An empty array is an empty map.
		return 0, n == 0, err
	}
	return n, err == nil, err
}

func (lv luaValues) Field(v lua.LValue, key string) (lua.LValue, bool) {
	e := v.(*lua.LTable).RawGetString(key)
	return e, e != lua.LNil
}

func (lv luaValues) Keys(v lua.LValue) ([]string, error) {
	var keys []string
	t := v.(*lua.LTable)
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		keys = append(keys, string(k.(lua.LString)))
	}
	return keys, nil
}

func (lv luaValues) OneKey(v lua.LValue) (string, lua.LValue, bool) {
	t, ok := v.(*lua.LTable)
	if !ok {
		return "", nil, false
	}
	if n, array, err := lv.tableKind(t); err != nil || array || n != 1 {
		return "", nil, false
	}
	k, e := t.Next(lua.LNil)
	return string(k.(lua.LString)), e, true
}

func (lv luaValues) Describe(v lua.LValue) string { return "a Lua " + v.Type().String() }

// tableMapper is valueMapper for KStream:mapValues, handing on the tables fn returns while
// flow says so.
func (rt *Runtime) tableMapper(fn *lua.LFunction, withKey bool, flow *tableFlow) pipeline.ValueMapper {
	convert := rt.valueMapper(fn, withKey)
	f := newKVFunc(fn, withKey)
	return func(rec pipeline.Record) (any, error) {
		if !flow.ok {
			return convert(rec)
		}
		if err := rt.callKV(f, &rec, 1); err != nil {
			return nil, err
		}
		ret := rt.pop()
		if a := f.value; a != nil && a.t != nil && ret == a.t {
			a.handed = luaTable{rt: rt, t: a.t, fn: fn, kept: a}
			a.values = luaValues{rt: rt, kept: a}
			return &a.handed, nil
		}
		if t, ok := ret.(*lua.LTable); ok {
			return &luaTable{rt: rt, t: t, fn: fn}, nil
		}
		return rt.returnedValue(fn, ret)
	}
}

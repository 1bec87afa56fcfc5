package luart

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// Lua 5.1 numbers are float64, exact for integers up to 2^53. Values of 64-bit serdes beyond
// that reach Lua as decimal strings, and decimal strings are accepted back wherever a number
// is serialised, so no precision is lost silently (docs/lua.md).
const maxExactInt = 1 << 53

// toLua converts a deserialised Go value into a Lua value. JSON null inside arrays and objects
// becomes stoat.null (a Lua table cannot hold nil), and arrays keep a marker metatable so
// that an empty array is written back as [] rather than {}.
func (rt *Runtime) toLua(v any) lua.LValue {
	switch x := v.(type) {
	case nil:
		return lua.LNil
	case string:
		return luaStringOf(v)
	case []byte:
		return lua.LString(x)
	case bool:
		return lua.LBool(x)
	case int64:
		return intToLua(x)
	case int32:
		return lua.LNumber(x)
	case int:
		return intToLua(int64(x))
	case uint64:
		if x > maxExactInt {
			return lua.LString(strconv.FormatUint(x, 10))
		}
		return lua.LNumber(x)
	case float64:
		return lua.LNumber(x)
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return intToLua(i)
		}
		if f, err := x.Float64(); err == nil {
			return lua.LNumber(f)
		}
		return lua.LString(x)
	case []any:
		t := rt.L.CreateTable(len(x), 0)
		for _, e := range x {
			t.Append(rt.elemToLua(e))
		}
		rt.L.SetMetatable(t, rt.arrayMT)
		return t
	case map[string]any:
		t := rt.L.CreateTable(0, len(x))
		for k, e := range x {
			t.RawSetString(k, rt.elemToLua(e))
		}
		return t
	case *schemas.Raw:
		return rt.rawToLua(x)
	case pipeline.Windowed:
		return rt.windowedToLua(x)
	case lua.LValue:
		return x
	default:
		return lua.LString(fmt.Sprint(x))
	}
}

func (rt *Runtime) elemToLua(v any) lua.LValue {
	if v == nil {
		return rt.null
	}
	return rt.toLua(v)
}

func intToLua(i int64) lua.LValue {
	if i > maxExactInt || i < -maxExactInt {
		return lua.LString(strconv.FormatInt(i, 10))
	}
	return lua.LNumber(i)
}

// fromLua converts a Lua value into the Go value serdes accept: integral numbers become int64,
// others float64; tables become []any (a sequence, or marked by stoat.array) or
// map[string]any; stoat.null becomes nil.
func (rt *Runtime) fromLua(v lua.LValue) (any, error) {
	return rt.fromLuaDepth(v, 0)
}

func (rt *Runtime) fromLuaDepth(v lua.LValue, depth int) (any, error) {
	if depth > 100 {
		return nil, fmt.Errorf("table nested deeper than 100 levels (a cycle?)")
	}
	switch x := v.(type) {
	case *lua.LNilType:
		return nil, nil
	case lua.LString:
		return goStringOf(v), nil
	case lua.LBool:
		return bool(x), nil
	case lua.LNumber:
		f := float64(x)
		if f == math.Trunc(f) && f >= -9.2e18 && f <= 9.2e18 {
			return int64(f), nil
		}
		return f, nil
	case *lua.LUserData:
		if x == rt.null {
			return nil, nil
		}
	case *lua.LTable:
		return rt.tableFromLua(x, depth)
	}
	return nil, fmt.Errorf("cannot convert a Lua %s to a record value", v.Type())
}

func (rt *Runtime) tableFromLua(t *lua.LTable, depth int) (any, error) {
	n := t.Len()
	isArray := rt.L.GetMetatable(t) == rt.arrayMT
	if !isArray && n > 0 {
		// A sequence 1..n with no other keys is an array.
		count := 0
		t.ForEach(func(lua.LValue, lua.LValue) { count++ })
		isArray = count == n
	}
	if isArray {
		out := make([]any, 0, n)
		for i := 1; i <= n; i++ {
			e, err := rt.fromLuaDepth(t.RawGetInt(i), depth+1)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out = append(out, e)
		}
		return out, nil
	}
	out := make(map[string]any)
	// Next walks the table's own boxed keys; ForEach would box every string key again.
	for k, e := t.Next(lua.LNil); k != lua.LNil; k, e = t.Next(k) {
		var name string
		switch kk := k.(type) {
		case lua.LString:
			name = string(kk)
		case lua.LNumber:
			name = kk.String()
		default:
			return out, fmt.Errorf("table key of type %s cannot become a JSON object key", k.Type())
		}
		val, err := rt.fromLuaDepth(e, depth+1)
		if err != nil {
			return out, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = val
	}
	return out, nil
}

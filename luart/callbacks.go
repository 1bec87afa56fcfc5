package luart

import (
	"encoding/json"
	"fmt"
	"math"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// The wrappers below turn Lua functions into the engine's callback types. Arguments follow
// the Java interfaces, then the record context r (DESIGN.md §4).

// defined is "file:line" of a Lua function's definition, for errors about what it returned.
func defined(fn *lua.LFunction) string {
	if fn.Proto == nil {
		return "<go function>"
	}
	return fmt.Sprintf("%s:%d", fn.Proto.SourceName, fn.Proto.LineDefined)
}

// kvFunc is a Lua function called with a record's key (withKey), value and r.
type kvFunc struct {
	fn      *lua.LFunction
	withKey bool
	// seeKey and seeValue are whether fn can see those arguments: a key or value beyond the
	// parameters fn declares, or one its code never reads, is pushed as nil instead of
	// converted (converting a record held as a table costs microseconds).
	seeKey, seeValue bool
	// key and value keep the tables of those arguments between calls, where fn lets them
	// (argtable.go).
	key, value *argTable
}

func newKVFunc(fn *lua.LFunction, withKey bool) *kvFunc {
	f := &kvFunc{fn: fn, withKey: withKey}
	valueReg := 0
	if withKey {
		unread, kept := argUse(fn, 0)
		f.seeKey, f.key = declaredParams(fn) >= 1 && !unread, kept
		valueReg = 1
	}
	unread, kept := argUse(fn, valueReg)
	f.seeValue, f.value = declaredParams(fn) > valueReg && !unread, kept
	return f
}

// callKV pushes fn, key, value and r, and calls fn expecting nret results.
func (rt *Runtime) callKV(f *kvFunc, rec *pipeline.Record, nret int) error {
	L := rt.L
	L.Push(f.fn)
	n := 2
	if f.withKey {
		L.Push(rt.argIf(f.seeKey, rec.Key, f.key))
		n++
	}
	L.Push(rt.argIf(f.seeValue, rec.Value, f.value))
	L.Push(rt.rctx.set(rec))
	err := rt.pcall(n, nret)
	f.key.release()
	f.value.release()
	return err
}

// declaredParams is how many arguments fn can see.
func declaredParams(fn *lua.LFunction) int {
	if fn.IsG || fn.Proto.IsVarArg != 0 {
		return math.MaxInt
	}
	return int(fn.Proto.NumParameters)
}

func (rt *Runtime) argIf(seen bool, v any, a *argTable) lua.LValue {
	if !seen {
		return lua.LNil
	}
	return rt.argToLua(v, a)
}

func (rt *Runtime) pop() lua.LValue {
	v := rt.L.Get(-1)
	rt.L.Pop(1)
	return v
}

func (rt *Runtime) predicate(fn *lua.LFunction) pipeline.Predicate {
	f := newKVFunc(fn, true)
	return func(rec pipeline.Record) (bool, error) {
		if err := rt.callKV(f, &rec, 1); err != nil {
			return false, err
		}
		return lua.LVAsBool(rt.pop()), nil
	}
}

func (rt *Runtime) valueMapper(fn *lua.LFunction, withKey bool) pipeline.ValueMapper {
	f := newKVFunc(fn, withKey)
	return func(rec pipeline.Record) (any, error) {
		if err := rt.callKV(f, &rec, 1); err != nil {
			return nil, err
		}
		return rt.returnedValue(fn, rt.pop())
	}
}

// returnedValue converts the value fn returned.
func (rt *Runtime) returnedValue(fn *lua.LFunction, ret lua.LValue) (any, error) {
	v, err := rt.fromLua(ret)
	if err != nil {
		return nil, fmt.Errorf("%s: returned value: %w", defined(fn), err)
	}
	return v, nil
}

func (rt *Runtime) keyValueMapper(fn *lua.LFunction) pipeline.KeyValueMapper {
	f := newKVFunc(fn, true)
	return func(rec pipeline.Record) (any, any, error) {
		if err := rt.callKV(f, &rec, 2); err != nil {
			return nil, nil, err
		}
		lv := rt.pop()
		lk := rt.pop()
		k, err := rt.fromLua(lk)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: returned key: %w", defined(fn), err)
		}
		v, err := rt.fromLua(lv)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: returned value: %w", defined(fn), err)
		}
		return k, v, nil
	}
}

func (rt *Runtime) flatMapper(fn *lua.LFunction) pipeline.FlatMapper {
	f := newKVFunc(fn, true)
	return func(rec pipeline.Record) ([]pipeline.KeyValue, error) {
		if err := rt.callKV(f, &rec, 1); err != nil {
			return nil, err
		}
		ret := rt.pop()
		if ret == lua.LNil {
			return nil, nil
		}
		list, ok := ret.(*lua.LTable)
		if !ok {
			return nil, fmt.Errorf("%s: flatMap must return a list of {key, value} pairs, not a %s", defined(fn), ret.Type())
		}
		out := make([]pipeline.KeyValue, 0, list.Len())
		for i := 1; i <= list.Len(); i++ {
			pair, ok := list.RawGetInt(i).(*lua.LTable)
			if !ok {
				return nil, fmt.Errorf("%s: flatMap result [%d] must be a {key, value} pair, not a %s", defined(fn), i, list.RawGetInt(i).Type())
			}
			k, err := rt.fromLua(pair.RawGetInt(1))
			if err != nil {
				return nil, fmt.Errorf("%s: flatMap result [%d] key: %w", defined(fn), i, err)
			}
			v, err := rt.fromLua(pair.RawGetInt(2))
			if err != nil {
				return nil, fmt.Errorf("%s: flatMap result [%d] value: %w", defined(fn), i, err)
			}
			out = append(out, pipeline.KeyValue{Key: k, Value: v})
		}
		return out, nil
	}
}

func (rt *Runtime) flatValueMapper(fn *lua.LFunction, withKey bool) pipeline.FlatValueMapper {
	f := newKVFunc(fn, withKey)
	return func(rec pipeline.Record) ([]any, error) {
		if err := rt.callKV(f, &rec, 1); err != nil {
			return nil, err
		}
		ret := rt.pop()
		if ret == lua.LNil {
			return nil, nil
		}
		list, ok := ret.(*lua.LTable)
		if !ok {
			return nil, fmt.Errorf("%s: flatMapValues must return a list of values, not a %s", defined(fn), ret.Type())
		}
		out := make([]any, 0, list.Len())
		for i := 1; i <= list.Len(); i++ {
			v, err := rt.fromLua(list.RawGetInt(i))
			if err != nil {
				return nil, fmt.Errorf("%s: flatMapValues result [%d]: %w", defined(fn), i, err)
			}
			out = append(out, v)
		}
		return out, nil
	}
}

func (rt *Runtime) foreachAction(fn *lua.LFunction) pipeline.ForeachAction {
	f := newKVFunc(fn, true)
	return func(rec pipeline.Record) error {
		return rt.callKV(f, &rec, 0)
	}
}

func (rt *Runtime) topicExtractor(fn *lua.LFunction) pipeline.TopicNameExtractor {
	f := newKVFunc(fn, true)
	return func(rec pipeline.Record) (string, error) {
		if err := rt.callKV(f, &rec, 1); err != nil {
			return "", err
		}
		ret := rt.pop()
		s, ok := ret.(lua.LString)
		if !ok {
			return "", fmt.Errorf("%s: a topic extractor must return a topic name, not a %s", defined(fn), ret.Type())
		}
		return string(s), nil
	}
}

func (rt *Runtime) timestampExtractor(fn *lua.LFunction) pipeline.TimestampExtractor {
	f := newKVFunc(fn, true)
	return func(rec pipeline.Record) (int64, error) {
		if err := rt.callKV(f, &rec, 1); err != nil {
			return 0, err
		}
		ret := rt.pop()
		n, ok := ret.(lua.LNumber)
		// Out of the int64 range (infinities too) int64(n) is undefined: math.MinInt64 here.
		if !ok || float64(n) != math.Trunc(float64(n)) || float64(n) < math.MinInt64 || float64(n) >= math.MaxInt64 {
			return 0, fmt.Errorf("%s: a timestamp extractor must return milliseconds as an integer, not %s", defined(fn), ret.String())
		}
		return int64(n), nil
	}
}

// partitioner wraps function(topic, key, value, headers, numPartitions) returning a
// partition, a list of partitions, or nil for the default partitioner.
func (rt *Runtime) partitioner(fn *lua.LFunction) pipeline.StreamPartitioner {
	return func(topic string, rec pipeline.Record, n int32) ([]int32, bool, error) {
		L := rt.L
		L.Push(fn)
		L.Push(lua.LString(topic))
		L.Push(rt.toLua(rec.Key))
		L.Push(rt.toLua(rec.Value))
		L.Push(rt.headersTable(rec.Headers))
		L.Push(lua.LNumber(n))
		if err := rt.pcall(5, 1); err != nil {
			return nil, false, err
		}
		switch ret := rt.pop().(type) {
		case *lua.LNilType:
			return nil, false, nil
		case lua.LNumber:
			p, err := partitionNumber(fn, ret)
			return []int32{p}, true, err
		case *lua.LTable:
			parts := make([]int32, 0, ret.Len())
			for i := 1; i <= ret.Len(); i++ {
				num, ok := ret.RawGetInt(i).(lua.LNumber)
				if !ok {
					return nil, false, fmt.Errorf("%s: partition list entry [%d] is not a number", defined(fn), i)
				}
				p, err := partitionNumber(fn, num)
				if err != nil {
					return nil, false, err
				}
				parts = append(parts, p)
			}
			return parts, true, nil
		default:
			return nil, false, fmt.Errorf("%s: a partitioner must return a partition, a list of partitions or nil, not a %s", defined(fn), ret.Type())
		}
	}
}

func partitionNumber(fn *lua.LFunction, n lua.LNumber) (int32, error) {
	f := float64(n)
	if f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
		return 0, fmt.Errorf("%s: partition %v is not a non-negative integer", defined(fn), f)
	}
	return int32(f), nil
}

// formatValue renders a key or value for KStream:print().
func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case []byte:
		return string(x)
	case map[string]any, []any:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	default:
		return fmt.Sprint(x)
	}
}

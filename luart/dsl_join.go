package luart

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// valueJoiner wraps a joiner chosen by arity, like the Java overloads: function(sv, tv)
// is a ValueJoiner, function(k, sv, tv) (or more parameters, or ...) a ValueJoinerWithKey.
// The record context r is passed last either way.
func (rt *Runtime) valueJoiner(fn *lua.LFunction) pipeline.ValueJoinerWithKey {
	withKey := fn.Proto == nil || fn.Proto.NumParameters >= 3 || fn.Proto.IsVarArg != 0
	return func(rec pipeline.Record, tableValue any) (any, error) {
		L := rt.L
		L.Push(fn)
		n := 3
		if withKey {
			L.Push(rt.toLua(rec.Key))
			n++
		}
		L.Push(rt.toLua(rec.Value))
		L.Push(rt.toLua(tableValue))
		L.Push(rt.rctx.set(&rec))
		if err := rt.pcall(n, 1); err != nil {
			return nil, err
		}
		return rt.fromLuaResult(fn, "joiner")
	}
}

// sJoin implements stream:join(table, joiner, {name=}) and leftJoin; a stream as the
// first argument makes a stream-stream join (dsl_streamjoin.go).
func (rt *Runtime) sJoin(left bool) lua.LGFunction {
	return func(L *lua.LState) int {
		ks := rt.checkStream(L)
		var table *pipeline.KTable
		if ud, ok := L.Get(2).(*lua.LUserData); ok {
			if g, ok := ud.Value.(*pipeline.GlobalKTable); ok {
				return rt.sJoinGlobal(L, ks, g, left)
			}
			if other, ok := ud.Value.(*pipeline.KStream); ok {
				kind := pipeline.InnerStreamJoin
				if left {
					kind = pipeline.LeftStreamJoin
				}
				return rt.sJoinStream(L, ks, other, kind)
			}
			table, _ = ud.Value.(*pipeline.KTable)
		}
		if table == nil {
			L.ArgError(2, "join needs a KStream, a KTable or a GlobalKTable")
		}
		fn := L.CheckFunction(3)
		o := options(L, 4, "join", joinedOpts)
		j := pipeline.Joined{Name: optString(L, o, "name"), Serdes: rt.serdesOpt(L, o), OtherValueSerde: rt.serdeOpt(L, o, "otherValueSerde")}
		if g := o.RawGetString("gracePeriod"); g != lua.LNil {
			ms, err := durationMs(g)
			if err != nil {
				L.RaiseError("join: gracePeriod: %v", err)
			}
			j.HasGracePeriod, j.GracePeriod = true, ms
		}
		var out *pipeline.KStream
		var err error
		if left {
			out, err = ks.LeftJoin(table, rt.valueJoiner(fn), j)
		} else {
			out, err = ks.Join(table, rt.valueJoiner(fn), j)
		}
		return rt.pushStream(L, out, err)
	}
}

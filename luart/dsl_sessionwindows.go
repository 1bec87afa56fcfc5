package luart

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// sessionWindowsClass is stoat.SessionWindows: ofInactivityGapWithNoGrace(gap) and
// ofInactivityGapAndGrace(gap, grace) (durations in ms or "10s" strings).
func (rt *Runtime) sessionWindowsClass() *lua.LTable {
	L := rt.L
	cls := L.NewTable()
	mk := func(L *lua.LState, w pipeline.SessionWindows) int {
		rt.raise(L, w.Validate())
		L.Push(rt.wrap(L, "SessionWindows", w, map[string]lua.LGFunction{}))
		return 1
	}
	cls.RawSetString("ofInactivityGapWithNoGrace", L.NewFunction(func(L *lua.LState) int {
		gap, err := durationMs(L.Get(1))
		if err != nil {
			L.ArgError(1, err.Error())
		}
		return mk(L, pipeline.SessionWindows{Gap: gap})
	}))
	cls.RawSetString("ofInactivityGapAndGrace", L.NewFunction(func(L *lua.LState) int {
		gap, err := durationMs(L.Get(1))
		if err != nil {
			L.ArgError(1, err.Error())
		}
		grace, err := durationMs(L.Get(2))
		if err != nil {
			L.ArgError(2, err.Error())
		}
		return mk(L, pipeline.SessionWindows{Gap: gap, Grace: grace})
	}))
	return cls
}

// sessionWindowedBy implements groupedStream:windowedBy(s.SessionWindows...).
func (rt *Runtime) sessionWindowedBy(L *lua.LState, g *pipeline.KGroupedStream, w pipeline.SessionWindows) int {
	sw, err := g.WindowedBySession(w)
	rt.raise(L, err)
	const typeName = "SessionWindowedKStream"
	L.Push(rt.wrap(L, typeName, sw, map[string]lua.LGFunction{
		"count": func(L *lua.LState) int {
			sw := checkValue[*pipeline.SessionWindowedKStream](L, typeName)
			o := options(L, 2, "count", storedOpts)
			t, err := sw.Count(rt.windowedMaterializedOpt(L, o), rt.longSerde(), optString(L, o, "name"))
			return rt.pushTable(L, t, err)
		},
		"reduce": func(L *lua.LState) int {
			sw := checkValue[*pipeline.SessionWindowedKStream](L, typeName)
			fn := L.CheckFunction(2)
			o := options(L, 3, "reduce", storedOpts)
			t, err := sw.Reduce(rt.reducer(fn), rt.windowedMaterializedOpt(L, o), optString(L, o, "name"))
			return rt.pushTable(L, t, err)
		},
		"aggregate": func(L *lua.LState) int {
			sw := checkValue[*pipeline.SessionWindowedKStream](L, typeName)
			init, agg, merge := L.CheckFunction(2), L.CheckFunction(3), L.CheckFunction(4)
			o := options(L, 5, "aggregate", storedOpts)
			t, err := sw.Aggregate(rt.initializer(init), rt.aggregator(agg), rt.merger(merge),
				rt.windowedMaterializedOpt(L, o), optString(L, o, "name"))
			return rt.pushTable(L, t, err)
		},
		"emitStrategy": func(L *lua.LState) int {
			sw := checkValue[*pipeline.SessionWindowedKStream](L, typeName)
			sw.EmitOnWindowClose(checkEmitStrategy(L, 2) == "onWindowClose")
			L.Push(L.Get(1))
			return 1
		},
	}))
	return 1
}

func checkEmitStrategy(L *lua.LState, i int) emitStrategy {
	if ud, ok := L.Get(i).(*lua.LUserData); ok {
		if s, ok := ud.Value.(emitStrategy); ok {
			return s
		}
	}
	L.ArgError(i, "emitStrategy needs s.EmitStrategy.onWindowClose() or s.EmitStrategy.onWindowUpdate()")
	return ""
}

// merger wraps function(key, aggregate1, aggregate2, r) → aggregate (Java's Merger).
func (rt *Runtime) merger(fn *lua.LFunction) pipeline.Merger {
	return func(rec pipeline.Record, agg1, agg2 any) (any, error) {
		L := rt.L
		L.Push(fn)
		L.Push(rt.toLua(rec.Key))
		L.Push(rt.toLua(agg1))
		L.Push(rt.toLua(agg2))
		L.Push(rt.rctx.set(&rec))
		if err := rt.pcall(4, 1); err != nil {
			return nil, err
		}
		return rt.fromLuaResult(fn, "merger")
	}
}

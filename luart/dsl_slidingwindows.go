package luart

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// slidingWindowsClass is stoat.SlidingWindows: ofTimeDifferenceAndGrace(d, grace) and
// ofTimeDifferenceWithNoGrace(d) (durations in ms or "10s" strings).
func (rt *Runtime) slidingWindowsClass() *lua.LTable {
	L := rt.L
	cls := L.NewTable()
	mk := func(L *lua.LState, w pipeline.SlidingWindows) int {
		rt.raise(L, w.Validate())
		L.Push(rt.wrap(L, "SlidingWindows", w, map[string]lua.LGFunction{}))
		return 1
	}
	cls.RawSetString("ofTimeDifferenceWithNoGrace", L.NewFunction(func(L *lua.LState) int {
		d, err := durationMs(L.Get(1))
		if err != nil {
			L.ArgError(1, err.Error())
		}
		return mk(L, pipeline.SlidingWindows{TimeDifference: d})
	}))
	cls.RawSetString("ofTimeDifferenceAndGrace", L.NewFunction(func(L *lua.LState) int {
		d, err := durationMs(L.Get(1))
		if err != nil {
			L.ArgError(1, err.Error())
		}
		grace, err := durationMs(L.Get(2))
		if err != nil {
			L.ArgError(2, err.Error())
		}
		return mk(L, pipeline.SlidingWindows{TimeDifference: d, Grace: grace})
	}))
	return cls
}

// slidingWindowedBy implements groupedStream:windowedBy(s.SlidingWindows...).
func (rt *Runtime) slidingWindowedBy(L *lua.LState, g *pipeline.KGroupedStream, w pipeline.SlidingWindows) int {
	sw, err := g.WindowedBySliding(w)
	rt.raise(L, err)
	const typeName = "SlidingWindowedKStream"
	L.Push(rt.wrap(L, typeName, sw, map[string]lua.LGFunction{
		"count": func(L *lua.LState) int {
			sw := checkValue[*pipeline.SlidingWindowedKStream](L, typeName)
			o := options(L, 2, "count", storedOpts)
			t, err := sw.Count(rt.windowedMaterializedOpt(L, o), rt.longSerde(), optString(L, o, "name"))
			return rt.pushTable(L, t, err)
		},
		"reduce": func(L *lua.LState) int {
			sw := checkValue[*pipeline.SlidingWindowedKStream](L, typeName)
			fn := L.CheckFunction(2)
			o := options(L, 3, "reduce", storedOpts)
			t, err := sw.Reduce(rt.reducer(fn), rt.windowedMaterializedOpt(L, o), optString(L, o, "name"))
			return rt.pushTable(L, t, err)
		},
		"aggregate": func(L *lua.LState) int {
			sw := checkValue[*pipeline.SlidingWindowedKStream](L, typeName)
			init, agg := L.CheckFunction(2), L.CheckFunction(3)
			o := options(L, 4, "aggregate", storedOpts)
			t, err := sw.Aggregate(rt.initializer(init), rt.aggregator(agg), rt.windowedMaterializedOpt(L, o), optString(L, o, "name"))
			return rt.pushTable(L, t, err)
		},
		"emitStrategy": func(L *lua.LState) int {
			sw := checkValue[*pipeline.SlidingWindowedKStream](L, typeName)
			sw.EmitOnWindowClose(checkEmitStrategy(L, 2) == "onWindowClose")
			L.Push(L.Get(1))
			return 1
		},
	}))
	return 1
}

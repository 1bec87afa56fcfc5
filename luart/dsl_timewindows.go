package luart

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// timeWindowsClass is stoat.TimeWindows: ofSizeWithNoGrace(size), ofSizeAndGrace(size,
// grace), and :advanceBy(d) on the result (durations in ms or "10s" strings).
func (rt *Runtime) timeWindowsClass() *lua.LTable {
	L := rt.L
	cls := L.NewTable()
	var mk func(w pipeline.TimeWindows) *lua.LUserData
	mk = func(w pipeline.TimeWindows) *lua.LUserData {
		return rt.wrap(L, "TimeWindows", w, map[string]lua.LGFunction{
			"advanceBy": func(L *lua.LState) int {
				w := checkValue[pipeline.TimeWindows](L, "TimeWindows")
				d, err := durationMs(L.Get(2))
				if err != nil {
					L.ArgError(2, err.Error())
				}
				w.Advance = d
				rt.raise(L, w.Validate())
				L.Push(mk(w))
				return 1
			},
		})
	}
	cls.RawSetString("ofSizeWithNoGrace", L.NewFunction(func(L *lua.LState) int {
		size, err := durationMs(L.Get(1))
		if err != nil {
			L.ArgError(1, err.Error())
		}
		w := pipeline.TimeWindows{Size: size, Advance: size}
		rt.raise(L, w.Validate())
		L.Push(mk(w))
		return 1
	}))
	cls.RawSetString("ofSizeAndGrace", L.NewFunction(func(L *lua.LState) int {
		size, err := durationMs(L.Get(1))
		if err != nil {
			L.ArgError(1, err.Error())
		}
		grace, err := durationMs(L.Get(2))
		if err != nil {
			L.ArgError(2, err.Error())
		}
		w := pipeline.TimeWindows{Size: size, Advance: size, Grace: grace}
		rt.raise(L, w.Validate())
		L.Push(mk(w))
		return 1
	}))
	return cls
}

// gsWindowedBy implements groupedStream:windowedBy(s.TimeWindows...).
func (rt *Runtime) gsWindowedBy(L *lua.LState) int {
	g := checkValue[*pipeline.KGroupedStream](L, "KGroupedStream")
	ud, ok := L.Get(2).(*lua.LUserData)
	if !ok {
		L.ArgError(2, "windowedBy needs windows, e.g. s.TimeWindows.ofSizeWithNoGrace(\"1m\")")
	}
	if sw, ok := ud.Value.(pipeline.SessionWindows); ok {
		return rt.sessionWindowedBy(L, g, sw)
	}
	if sw, ok := ud.Value.(pipeline.SlidingWindows); ok {
		return rt.slidingWindowedBy(L, g, sw)
	}
	w, ok := ud.Value.(pipeline.TimeWindows)
	if !ok {
		L.ArgError(2, "windowedBy needs s.TimeWindows, s.SlidingWindows or s.SessionWindows")
	}
	tw, err := g.WindowedBy(w)
	rt.raise(L, err)
	L.Push(rt.wrap(L, "TimeWindowedKStream", tw, map[string]lua.LGFunction{
		"count": func(L *lua.LState) int {
			tw := checkValue[*pipeline.TimeWindowedKStream](L, "TimeWindowedKStream")
			o := options(L, 2, "count", storedOpts)
			t, err := tw.Count(rt.windowedMaterializedOpt(L, o), rt.longSerde(), optString(L, o, "name"))
			return rt.pushTable(L, t, err)
		},
		"reduce": func(L *lua.LState) int {
			tw := checkValue[*pipeline.TimeWindowedKStream](L, "TimeWindowedKStream")
			fn := L.CheckFunction(2)
			o := options(L, 3, "reduce", storedOpts)
			t, err := tw.Reduce(rt.reducer(fn), rt.windowedMaterializedOpt(L, o), optString(L, o, "name"))
			return rt.pushTable(L, t, err)
		},
		"emitStrategy": func(L *lua.LState) int {
			tw := checkValue[*pipeline.TimeWindowedKStream](L, "TimeWindowedKStream")
			ud, ok := L.Get(2).(*lua.LUserData)
			var strategy emitStrategy
			isStrategy := false
			if ok {
				strategy, isStrategy = ud.Value.(emitStrategy)
			}
			if !isStrategy {
				L.ArgError(2, "emitStrategy needs s.EmitStrategy.onWindowClose() or s.EmitStrategy.onWindowUpdate()")
			}
			tw.EmitOnWindowClose(strategy == "onWindowClose")
			L.Push(L.Get(1))
			return 1
		},
		"aggregate": func(L *lua.LState) int {
			tw := checkValue[*pipeline.TimeWindowedKStream](L, "TimeWindowedKStream")
			init, agg := L.CheckFunction(2), L.CheckFunction(3)
			o := options(L, 4, "aggregate", storedOpts)
			t, err := tw.Aggregate(rt.initializer(init), rt.aggregator(agg), rt.windowedMaterializedOpt(L, o), optString(L, o, "name"))
			return rt.pushTable(L, t, err)
		},
	}))
	return 1
}

// windowedToLua renders a windowed key as {key = k, window = {start = ms, ["end"] = ms}}.
func (rt *Runtime) windowedToLua(w pipeline.Windowed) *lua.LTable {
	return rt.windowedInto(nil, nil, w)
}

// windowedInto renders w into t and its window into win, tables holding no other keys, or
// new tables where they are nil.
func (rt *Runtime) windowedInto(t, win *lua.LTable, w pipeline.Windowed) *lua.LTable {
	if t == nil {
		t = rt.L.CreateTable(0, 2)
	}
	if win == nil {
		win = rt.L.CreateTable(0, 2)
	}
	t.RawSetString("key", rt.toLua(w.Key))
	win.RawSetString("start", intToLua(w.Start))
	win.RawSetString("end", intToLua(w.End))
	t.RawSetString("window", win)
	return t
}

// emitStrategy is a value of stoat.EmitStrategy: "onWindowClose" or "onWindowUpdate".
type emitStrategy string

// emitStrategyClass is stoat.EmitStrategy with onWindowClose() and onWindowUpdate().
func (rt *Runtime) emitStrategyClass() *lua.LTable {
	L := rt.L
	cls := L.NewTable()
	for _, name := range []string{"onWindowClose", "onWindowUpdate"} {
		v := emitStrategy(name)
		cls.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			L.Push(rt.wrap(L, "EmitStrategy", v, map[string]lua.LGFunction{
				"type": func(L *lua.LState) int {
					if checkValue[emitStrategy](L, "EmitStrategy") == "onWindowClose" {
						L.Push(lua.LString("ON_WINDOW_CLOSE"))
					} else {
						L.Push(lua.LString("ON_WINDOW_UPDATE"))
					}
					return 1
				},
			}))
			return 1
		}))
	}
	return cls
}

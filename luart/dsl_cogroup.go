package luart

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// wrapCogrouped exposes a CogroupedKStream; cogroup returns the same object, as Kafka
// Streams' CogroupedKStream#cogroup returns this.
func (rt *Runtime) wrapCogrouped(L *lua.LState, c *pipeline.CogroupedKStream) *lua.LUserData {
	return rt.wrap(L, "CogroupedKStream", c, map[string]lua.LGFunction{
		"cogroup":    rt.cgCogroup,
		"aggregate":  rt.cgAggregate,
		"windowedBy": rt.cgWindowedBy,
	})
}

// gsCogroup implements groupedStream:cogroup(function(k, v, agg, r) ... end).
func (rt *Runtime) gsCogroup(L *lua.LState) int {
	g := checkValue[*pipeline.KGroupedStream](L, "KGroupedStream")
	fn := L.CheckFunction(2)
	c, err := g.Cogroup(rt.aggregator(fn))
	rt.raise(L, err)
	L.Push(rt.wrapCogrouped(L, c))
	return 1
}

// cgCogroup implements cogrouped:cogroup(groupedStream, function(k, v, agg, r) ... end).
func (rt *Runtime) cgCogroup(L *lua.LState) int {
	c := checkValue[*pipeline.CogroupedKStream](L, "CogroupedKStream")
	ud, ok := L.Get(2).(*lua.LUserData)
	var g *pipeline.KGroupedStream
	if ok {
		g, ok = ud.Value.(*pipeline.KGroupedStream)
	}
	if !ok {
		L.ArgError(2, "cogroup expects a grouped stream (from groupByKey or groupBy)")
	}
	fn := L.CheckFunction(3)
	_, err := c.Cogroup(g, rt.aggregator(fn))
	rt.raise(L, err)
	L.Push(L.Get(1))
	return 1
}

// cgAggregate implements cogrouped:aggregate(initializer [, {name=, materialized=}]).
func (rt *Runtime) cgAggregate(L *lua.LState) int {
	c := checkValue[*pipeline.CogroupedKStream](L, "CogroupedKStream")
	init := L.CheckFunction(2)
	o := options(L, 3, "aggregate", storedOpts)
	t, err := c.Aggregate(rt.initializer(init), rt.materializedOpt(L, o), optString(L, o, "name"))
	return rt.pushTable(L, t, err)
}

// cgWindowedBy implements cogrouped:windowedBy(s.TimeWindows... | s.SlidingWindows... |
// s.SessionWindows...): a TimeWindowedCogroupedKStream with aggregate(init [, opts]), or a
// SessionWindowedCogroupedKStream with aggregate(init, merger [, opts]).
func (rt *Runtime) cgWindowedBy(L *lua.LState) int {
	c := checkValue[*pipeline.CogroupedKStream](L, "CogroupedKStream")
	var w *pipeline.WindowedCogroupedKStream
	var err error
	ud, _ := L.Get(2).(*lua.LUserData)
	if ud == nil {
		L.ArgError(2, "windowedBy needs s.TimeWindows, s.SlidingWindows or s.SessionWindows")
	}
	switch x := ud.Value.(type) {
	case pipeline.TimeWindows:
		w, err = c.WindowedBy(x)
	case pipeline.SlidingWindows:
		w, err = c.WindowedBySliding(x)
	case pipeline.SessionWindows:
		w, err = c.WindowedBySession(x)
	default:
		L.ArgError(2, "windowedBy needs s.TimeWindows, s.SlidingWindows or s.SessionWindows")
	}
	rt.raise(L, err)
	typeName := "TimeWindowedCogroupedKStream"
	if w.Sessions() {
		typeName = "SessionWindowedCogroupedKStream"
	}
	L.Push(rt.wrap(L, typeName, w, map[string]lua.LGFunction{
		"aggregate": func(L *lua.LState) int {
			w := checkValue[*pipeline.WindowedCogroupedKStream](L, typeName)
			init := L.CheckFunction(2)
			var merge pipeline.Merger
			oi := 3
			if w.Sessions() {
				merge, oi = rt.merger(L.CheckFunction(3)), 4
			}
			o := options(L, oi, "aggregate", storedOpts)
			t, err := w.Aggregate(rt.initializer(init), merge, rt.windowedMaterializedOpt(L, o), optString(L, o, "name"))
			return rt.pushTable(L, t, err)
		},
	}))
	return 1
}

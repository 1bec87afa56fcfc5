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

func (rt *Runtime) cgWindowedBy(L *lua.LState) int {
	L.RaiseError("not supported yet: CogroupedKStream:windowedBy (windowed cogrouped aggregations come in a later StoatFlow release; see docs/COMPATIBILITY.md)")
	return 0
}

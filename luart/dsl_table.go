package luart

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes"
)

// materializedOpt reads `materialized = "store"` or `materialized = {name=, keySerde=,
// valueSerde=, logging=, caching=, type=, historyRetention=}`; type = "versionedKeyValue"
// with historyRetention is Materialized.as(Stores.persistentVersionedKeyValueStore(name,
// historyRetention)).
func (rt *Runtime) materializedOpt(L *lua.LState, o *lua.LTable) pipeline.Materialized {
	return rt.materialized(L, o, false)
}

// windowedMaterializedOpt reads the materialized option of a windowed or session
// aggregation, which also takes retention (Materialized.withRetention).
func (rt *Runtime) windowedMaterializedOpt(L *lua.LState, o *lua.LTable) pipeline.Materialized {
	return rt.materialized(L, o, true)
}

func (rt *Runtime) materialized(L *lua.LState, o *lua.LTable, windowed bool) pipeline.Materialized {
	var m pipeline.Materialized
	switch v := o.RawGetString("materialized").(type) {
	case *lua.LNilType:
	case lua.LString:
		m.StoreName, m.Given = string(v), true
	case *lua.LTable:
		L.Push(v)
		mo := options(L, L.GetTop(), "materialized", materializedOpts)
		L.Pop(1)
		switch typ := optString(L, mo, "type"); typ {
		case "", "timestampedKeyValue":
			if mo.RawGetString("historyRetention") != lua.LNil {
				L.RaiseError("materialized: historyRetention applies to type = \"versionedKeyValue\" only")
			}
		case "versionedKeyValue":
			hr := mo.RawGetString("historyRetention")
			if hr == lua.LNil {
				L.RaiseError("materialized: a versionedKeyValue store needs historyRetention")
			}
			ms, err := durationMs(hr)
			if err != nil {
				L.RaiseError("materialized: historyRetention: %v", err)
			}
			m.Versioned, m.HistoryRetention = true, ms
		default:
			L.RaiseError("materialized: type must be \"timestampedKeyValue\" or \"versionedKeyValue\", not %q", typ)
		}
		if r := mo.RawGetString("retention"); r != lua.LNil {
			if !windowed {
				L.RaiseError("materialized: retention applies to the stores of windowed and session aggregations only (Materialized.withRetention); this one keeps a key-value store")
			}
			ms, err := durationMs(r)
			if err != nil {
				L.RaiseError("materialized: retention: %v", err)
			}
			m.HasRetention, m.Retention = true, ms
		}
		m.Given = true
		m.StoreName = optString(L, mo, "name")
		m.Serdes = rt.serdesOpt(L, mo)
		m.LoggingDisabled, m.TopicConfig = loggingOpt(L, mo, "materialized")
		if mo.RawGetString("caching") != lua.LNil {
			m.CachingDisabled = !optBool(L, mo, "caching")
		}
	default:
		L.RaiseError("materialized must be a store name or a table {name=, keySerde=, valueSerde=, logging=}")
	}
	return m
}

func (rt *Runtime) groupedOpt(L *lua.LState, o *lua.LTable) pipeline.Grouped {
	return pipeline.Grouped{Name: optString(L, o, "name"), Serdes: rt.serdesOpt(L, o)}
}

func (rt *Runtime) wrap(L *lua.LState, typeName string, v any, methods map[string]lua.LGFunction) *lua.LUserData {
	key := "stoat." + typeName
	mt, ok := L.GetField(L.Get(lua.RegistryIndex), key).(*lua.LTable)
	if !ok {
		mt = rt.typeMetatable(typeName, methods)
		L.SetField(L.Get(lua.RegistryIndex), key, mt)
	}
	ud := L.NewUserData()
	ud.Value = v
	L.SetMetatable(ud, mt)
	return ud
}

func (rt *Runtime) wrapTable(L *lua.LState, t *pipeline.KTable) *lua.LUserData {
	return rt.wrap(L, "KTable", t, map[string]lua.LGFunction{
		"toStream":           rt.tToStream,
		"filter":             rt.tFilter(false),
		"filterNot":          rt.tFilter(true),
		"mapValues":          rt.tMapValues,
		"groupBy":            rt.tGroupBy,
		"queryableStoreName": rt.tStoreName,
		"suppress":           rt.tSuppress,
		"join":               rt.tJoin(pipeline.InnerTableJoin),
		"leftJoin":           rt.tJoin(pipeline.LeftTableJoin),
		"outerJoin":          rt.tJoin(pipeline.OuterTableJoin),
	})
}

func checkValue[T any](L *lua.LState, what string) T {
	if ud, ok := L.Get(1).(*lua.LUserData); ok {
		if v, ok := ud.Value.(T); ok {
			return v
		}
	}
	L.RaiseError("call %s methods with ':'", what)
	var zero T
	return zero
}

func (rt *Runtime) pushTable(L *lua.LState, t *pipeline.KTable, err error) int {
	rt.raise(L, err)
	L.Push(rt.wrapTable(L, t))
	return 1
}

// bTable implements b:table(topic, {keySerde=, valueSerde=, materialized=, timestampExtractor=, name=, offsetReset=}).
func (rt *Runtime) bTable(L *lua.LState) int {
	rt.checkBuilder(L)
	topic := L.CheckString(2)
	o := options(L, 3, "table", tableOpts)
	c := pipeline.Consumed{Name: optString(L, o, "name"), Serdes: rt.serdesOpt(L, o), OffsetReset: offsetResetOpt(L, o)}
	if fn := optFunction(L, o, "timestampExtractor"); fn != nil {
		c.TimestampExtractor = rt.timestampExtractor(fn)
	}
	t, err := rt.builder.Table(topic, c, rt.materializedOpt(L, o))
	return rt.pushTable(L, t, err)
}

func (rt *Runtime) sToTable(L *lua.LState) int {
	ks := rt.checkStream(L)
	o := options(L, 2, "toTable", storedOpts)
	t, err := ks.ToTable(optString(L, o, "name"), rt.materializedOpt(L, o))
	return rt.pushTable(L, t, err)
}

func (rt *Runtime) wrapGroupedStream(L *lua.LState, g *pipeline.KGroupedStream) *lua.LUserData {
	return rt.wrap(L, "KGroupedStream", g, map[string]lua.LGFunction{
		"count":      rt.gsCount,
		"reduce":     rt.gsReduce,
		"aggregate":  rt.gsAggregate,
		"windowedBy": rt.gsWindowedBy,
		"cogroup":    rt.gsCogroup,
	})
}

func (rt *Runtime) sGroupByKey(L *lua.LState) int {
	ks := rt.checkStream(L)
	o := options(L, 2, "groupByKey", groupedOpts)
	g, err := ks.GroupByKey(rt.groupedOpt(L, o))
	rt.raise(L, err)
	L.Push(rt.wrapGroupedStream(L, g))
	return 1
}

func (rt *Runtime) sGroupBy(L *lua.LState) int {
	ks := rt.checkStream(L)
	fn := L.CheckFunction(2)
	o := options(L, 3, "groupBy", groupedOpts)
	g, err := ks.GroupBy(rt.valueMapper(fn, true), rt.groupedOpt(L, o))
	rt.raise(L, err)
	L.Push(rt.wrapGroupedStream(L, g))
	return 1
}

func (rt *Runtime) longSerde() pipeline.Serde {
	s, _ := serdes.ByName("long")
	return s
}

func (rt *Runtime) gsCount(L *lua.LState) int {
	g := checkValue[*pipeline.KGroupedStream](L, "KGroupedStream")
	o := options(L, 2, "count", storedOpts)
	t, err := g.Count(rt.materializedOpt(L, o), rt.longSerde(), optString(L, o, "name"))
	return rt.pushTable(L, t, err)
}

// reducer wraps function(aggregate, value, r) → aggregate (Java's Reducer).
func (rt *Runtime) reducer(fn *lua.LFunction) pipeline.Aggregator {
	return func(rec pipeline.Record, agg any) (any, error) {
		L := rt.L
		L.Push(fn)
		L.Push(rt.toLua(agg))
		L.Push(rt.toLua(rec.Value))
		L.Push(rt.rctx.set(&rec))
		if err := rt.pcall(3, 1); err != nil {
			return nil, err
		}
		return rt.fromLuaResult(fn, "reducer")
	}
}

// aggregator wraps function(key, value, aggregate, r) → aggregate (Java's Aggregator).
func (rt *Runtime) aggregator(fn *lua.LFunction) pipeline.Aggregator {
	return func(rec pipeline.Record, agg any) (any, error) {
		L := rt.L
		L.Push(fn)
		L.Push(rt.toLua(rec.Key))
		L.Push(rt.toLua(rec.Value))
		L.Push(rt.toLua(agg))
		L.Push(rt.rctx.set(&rec))
		if err := rt.pcall(4, 1); err != nil {
			return nil, err
		}
		return rt.fromLuaResult(fn, "aggregator")
	}
}

func (rt *Runtime) initializer(fn *lua.LFunction) pipeline.Initializer {
	return func() (any, error) {
		rt.L.Push(fn)
		if err := rt.pcall(0, 1); err != nil {
			return nil, err
		}
		return rt.fromLuaResult(fn, "initializer")
	}
}

func (rt *Runtime) fromLuaResult(fn *lua.LFunction, what string) (any, error) {
	v, err := rt.fromLua(rt.pop())
	if err != nil {
		return nil, &ScriptError{Message: defined(fn) + ": " + what + " returned " + err.Error(), Location: defined(fn)}
	}
	return v, nil
}

func (rt *Runtime) gsReduce(L *lua.LState) int {
	g := checkValue[*pipeline.KGroupedStream](L, "KGroupedStream")
	fn := L.CheckFunction(2)
	o := options(L, 3, "reduce", storedOpts)
	t, err := g.Reduce(rt.reducer(fn), rt.materializedOpt(L, o), optString(L, o, "name"))
	return rt.pushTable(L, t, err)
}

func (rt *Runtime) gsAggregate(L *lua.LState) int {
	g := checkValue[*pipeline.KGroupedStream](L, "KGroupedStream")
	init := L.CheckFunction(2)
	agg := L.CheckFunction(3)
	o := options(L, 4, "aggregate", storedOpts)
	t, err := g.Aggregate(rt.initializer(init), rt.aggregator(agg), rt.materializedOpt(L, o), optString(L, o, "name"))
	return rt.pushTable(L, t, err)
}

func (rt *Runtime) tToStream(L *lua.LState) int {
	t := checkValue[*pipeline.KTable](L, "KTable")
	var mapper *lua.LFunction
	oi := 2
	if fn, ok := L.Get(2).(*lua.LFunction); ok {
		mapper, oi = fn, 3
	}
	o := options(L, oi, "toStream", namedOpts)
	ks, err := t.ToStream(optString(L, o, "name"))
	rt.raise(L, err)
	if mapper != nil {
		ks, err = ks.SelectKey(rt.valueMapper(mapper, true), "")
	}
	return rt.pushStream(L, ks, err)
}

func (rt *Runtime) tFilter(not bool) lua.LGFunction {
	return func(L *lua.LState) int {
		t := checkValue[*pipeline.KTable](L, "KTable")
		fn := L.CheckFunction(2)
		o := options(L, 3, "filter", namedOpts)
		out, err := t.Filter(rt.predicate(fn), not, optString(L, o, "name"))
		return rt.pushTable(L, out, err)
	}
}

func (rt *Runtime) tMapValues(L *lua.LState) int {
	t := checkValue[*pipeline.KTable](L, "KTable")
	fn := L.CheckFunction(2)
	o := options(L, 3, "mapValues", withKeyOpts)
	out, err := t.MapValues(rt.valueMapper(fn, optBool(L, o, "withKey")), optString(L, o, "name"))
	return rt.pushTable(L, out, err)
}

func (rt *Runtime) tStoreName(L *lua.LState) int {
	t := checkValue[*pipeline.KTable](L, "KTable")
	if t.StoreName() == "" {
		L.Push(lua.LNil)
	} else {
		L.Push(lua.LString(t.StoreName()))
	}
	return 1
}

func (rt *Runtime) tGroupBy(L *lua.LState) int {
	t := checkValue[*pipeline.KTable](L, "KTable")
	fn := L.CheckFunction(2)
	o := options(L, 3, "groupBy", groupedOpts)
	g, err := t.GroupBy(rt.keyValueMapper(fn), rt.groupedOpt(L, o))
	rt.raise(L, err)
	L.Push(rt.wrap(L, "KGroupedTable", g, map[string]lua.LGFunction{
		"count":     rt.gtCount,
		"reduce":    rt.gtReduce,
		"aggregate": rt.gtAggregate,
	}))
	return 1
}

func (rt *Runtime) gtCount(L *lua.LState) int {
	g := checkValue[*pipeline.KGroupedTable](L, "KGroupedTable")
	o := options(L, 2, "count", storedOpts)
	t, err := g.Count(rt.materializedOpt(L, o), rt.longSerde(), optString(L, o, "name"))
	return rt.pushTable(L, t, err)
}

func (rt *Runtime) gtReduce(L *lua.LState) int {
	g := checkValue[*pipeline.KGroupedTable](L, "KGroupedTable")
	adder, sub := L.CheckFunction(2), L.CheckFunction(3)
	o := options(L, 4, "reduce", storedOpts)
	t, err := g.Reduce(rt.reducer(adder), rt.reducer(sub), rt.materializedOpt(L, o), optString(L, o, "name"))
	return rt.pushTable(L, t, err)
}

func (rt *Runtime) gtAggregate(L *lua.LState) int {
	g := checkValue[*pipeline.KGroupedTable](L, "KGroupedTable")
	init, adder, sub := L.CheckFunction(2), L.CheckFunction(3), L.CheckFunction(4)
	o := options(L, 5, "aggregate", storedOpts)
	t, err := g.Aggregate(rt.initializer(init), rt.aggregator(adder), rt.aggregator(sub), rt.materializedOpt(L, o), optString(L, o, "name"))
	return rt.pushTable(L, t, err)
}

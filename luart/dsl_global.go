package luart

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// bGlobalTable implements b:globalTable(topic, {keySerde=, valueSerde=, materialized=,
// timestampExtractor=, name=}).
func (rt *Runtime) bGlobalTable(L *lua.LState) int {
	rt.checkBuilder(L)
	topic := L.CheckString(2)
	o := options(L, 3, "globalTable", tableOpts)
	c := pipeline.Consumed{Name: optString(L, o, "name"), Serdes: rt.serdesOpt(L, o)}
	if fn := optFunction(L, o, "timestampExtractor"); fn != nil {
		c.TimestampExtractor = rt.timestampExtractor(fn)
	}
	m := rt.materializedOpt(L, o)
	if m.LoggingDisabled {
		L.RaiseError("globalTable: a global store has no changelog (its topic is its changelog); remove logging")
	}
	g, err := rt.builder.GlobalTable(topic, c, m)
	rt.raise(L, err)
	L.Push(rt.wrap(L, "GlobalKTable", g, map[string]lua.LGFunction{
		"queryableStoreName": func(L *lua.LState) int {
			L.Push(lua.LString(checkValue[*pipeline.GlobalKTable](L, "GlobalKTable").StoreName()))
			return 1
		},
	}))
	return 1
}

// globalJoinerArity picks the joiner form by arity: 4 parameters (or ...) is
// ValueJoinerWithStreamAndMappedKey (KIP-1340), 3 the deprecated ValueJoinerWithKey (it gets
// the stream key), 2 a ValueJoiner.
func globalJoinerArity(fn *lua.LFunction) int {
	if fn.Proto == nil || fn.Proto.IsVarArg != 0 || fn.Proto.NumParameters >= 4 {
		return 4
	}
	return max(int(fn.Proto.NumParameters), 2)
}

// globalJoiner wraps a stream-GlobalKTable joiner; the record context r is passed last.
func (rt *Runtime) globalJoiner(fn *lua.LFunction) pipeline.ValueJoinerWithMappedKey {
	arity := globalJoinerArity(fn)
	if arity == 3 {
		rt.Warnings = append(rt.Warnings, fmt.Sprintf("%s: a 3-argument joiner of a GlobalKTable join gets the stream key (ValueJoinerWithKey, deprecated since Kafka Streams 4.4); use function(streamKey, mappedKey, streamValue, tableValue) (KIP-1340)", rt.where()))
	}
	return func(rec pipeline.Record, mappedKey, tableValue any) (any, error) {
		L := rt.L
		L.Push(fn)
		if arity >= 3 {
			L.Push(rt.toLua(rec.Key))
		}
		if arity == 4 {
			L.Push(rt.toLua(mappedKey))
		}
		L.Push(rt.toLua(rec.Value))
		L.Push(rt.toLua(tableValue))
		L.Push(rt.rctx.set(&rec))
		if err := rt.pcall(arity+1, 1); err != nil {
			return nil, err
		}
		return rt.fromLuaResult(fn, "joiner")
	}
}

// sJoinGlobal implements stream:join(globalTable, keyMapper, joiner, {name=}) and leftJoin;
// keyMapper is function(k, v, r) returning the table key.
func (rt *Runtime) sJoinGlobal(L *lua.LState, ks *pipeline.KStream, g *pipeline.GlobalKTable, left bool) int {
	mapper := rt.valueMapper(L.CheckFunction(3), true)
	joiner := rt.globalJoiner(L.CheckFunction(4))
	o := options(L, 5, "join", namedOpts)
	var out *pipeline.KStream
	var err error
	if left {
		out, err = ks.LeftJoinGlobal(g, mapper, joiner, optString(L, o, "name"))
	} else {
		out, err = ks.JoinGlobal(g, mapper, joiner, optString(L, o, "name"))
	}
	return rt.pushStream(L, out, err)
}

// bAddGlobalStore implements b:addGlobalStore(store, topic, {keySerde=, valueSerde=,
// timestampExtractor=}, supplier): store is addStateStore's table, supplier a function
// returning a processor table {init=, process=, close=} (or such a table), as
// StreamsBuilder#addGlobalStore(StoreBuilder, topic, Consumed, ProcessorSupplier).
func (rt *Runtime) bAddGlobalStore(L *lua.LState) int {
	rt.checkBuilder(L)
	spec := rt.storeSpecArg(L, 2)
	topic := L.CheckString(3)
	o := options(L, 4, "addGlobalStore", globalStoreOpts)
	c := pipeline.Consumed{Serdes: rt.serdesOpt(L, o)}
	if fn := optFunction(L, o, "timestampExtractor"); fn != nil {
		c.TimestampExtractor = rt.timestampExtractor(fn)
	}
	arg := L.Get(5)
	if _, ok := arg.(*lua.LFunction); !ok {
		if _, ok := arg.(*lua.LTable); !ok {
			L.ArgError(5, "addGlobalStore needs a processor table {init=, process=, close=} or a function returning one")
		}
	}
	rt.raise(L, rt.builder.AddGlobalStore(spec, topic, c, rt.processorSupplier(arg, false)))
	return 0
}

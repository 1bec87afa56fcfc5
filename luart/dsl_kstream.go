package luart

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

func (rt *Runtime) streamMetatable() *lua.LTable {
	L := rt.L
	if mt, ok := L.GetField(L.Get(lua.RegistryIndex), "stoat.KStream").(*lua.LTable); ok {
		return mt
	}
	mt := rt.typeMetatable("KStream", map[string]lua.LGFunction{
		"filter":        rt.sFilter(false),
		"filterNot":     rt.sFilter(true),
		"selectKey":     rt.sSelectKey,
		"map":           rt.sMap,
		"mapValues":     rt.sMapValues,
		"flatMap":       rt.sFlatMap,
		"flatMapValues": rt.sFlatMapValues,
		"peek":          rt.sPeek,
		"foreach":       rt.sForeach,
		"print":         rt.sPrint,
		"merge":         rt.sMerge,
		"to":            rt.sTo,
		"repartition":   rt.sRepartition,
		"split":         rt.sSplit,
		"join":          rt.sJoin(false),
		"leftJoin":      rt.sJoin(true),
		"outerJoin":     rt.sOuterJoin,
		"groupByKey":    rt.sGroupByKey,
		"groupBy":       rt.sGroupBy,
		"toTable":       rt.sToTable,
		"process":       rt.sProcess(false),
		"processValues": rt.sProcess(true),
	})
	L.SetField(L.Get(lua.RegistryIndex), "stoat.KStream", mt)
	return mt
}

func (rt *Runtime) wrapStream(ks *pipeline.KStream) *lua.LUserData {
	ud := rt.L.NewUserData()
	ud.Value = ks
	rt.L.SetMetatable(ud, rt.streamMetatable())
	return ud
}

func (rt *Runtime) checkStream(L *lua.LState) *pipeline.KStream {
	if ud, ok := L.Get(1).(*lua.LUserData); ok {
		if ks, ok := ud.Value.(*pipeline.KStream); ok {
			return ks
		}
	}
	L.RaiseError("call KStream methods with ':' (stream:filter(...))")
	return nil
}

func (rt *Runtime) pushStream(L *lua.LState, ks *pipeline.KStream, err error) int {
	rt.raise(L, err)
	L.Push(rt.wrapStream(ks))
	return 1
}

func (rt *Runtime) sFilter(not bool) lua.LGFunction {
	return func(L *lua.LState) int {
		ks := rt.checkStream(L)
		fn := L.CheckFunction(2)
		o := options(L, 3, "filter", namedOpts)
		pred := rt.predicate(fn)
		var out *pipeline.KStream
		var err error
		if not {
			out, err = ks.FilterNot(pred, optString(L, o, "name"))
		} else {
			out, err = ks.Filter(pred, optString(L, o, "name"))
		}
		rt.passRaw(ks, out)
		return rt.pushStream(L, out, err)
	}
}

func (rt *Runtime) sSelectKey(L *lua.LState) int {
	ks := rt.checkStream(L)
	fn := L.CheckFunction(2)
	o := options(L, 3, "selectKey", namedOpts)
	out, err := ks.SelectKey(rt.valueMapper(fn, true), optString(L, o, "name"))
	return rt.pushStream(L, out, err)
}

func (rt *Runtime) sMap(L *lua.LState) int {
	ks := rt.checkStream(L)
	fn := L.CheckFunction(2)
	o := options(L, 3, "map", namedOpts)
	out, err := ks.Map(rt.keyValueMapper(fn), optString(L, o, "name"))
	return rt.pushStream(L, out, err)
}

func (rt *Runtime) sMapValues(L *lua.LState) int {
	ks := rt.checkStream(L)
	fn := L.CheckFunction(2)
	o := options(L, 3, "mapValues", withKeyOpts)
	flow := &tableFlow{ok: true}
	out, err := ks.MapValues(rt.tableMapper(fn, optBool(L, o, "withKey"), flow), optString(L, o, "name"))
	if err == nil {
		rt.tableStreams[out] = flow
	}
	return rt.pushStream(L, out, err)
}

func (rt *Runtime) sFlatMap(L *lua.LState) int {
	ks := rt.checkStream(L)
	fn := L.CheckFunction(2)
	o := options(L, 3, "flatMap", namedOpts)
	out, err := ks.FlatMap(rt.flatMapper(fn), optString(L, o, "name"))
	return rt.pushStream(L, out, err)
}

func (rt *Runtime) sFlatMapValues(L *lua.LState) int {
	ks := rt.checkStream(L)
	fn := L.CheckFunction(2)
	o := options(L, 3, "flatMapValues", withKeyOpts)
	out, err := ks.FlatMapValues(rt.flatValueMapper(fn, optBool(L, o, "withKey")), optString(L, o, "name"))
	return rt.pushStream(L, out, err)
}

func (rt *Runtime) sPeek(L *lua.LState) int {
	ks := rt.checkStream(L)
	fn := L.CheckFunction(2)
	o := options(L, 3, "peek", namedOpts)
	out, err := ks.Peek(rt.foreachAction(fn), optString(L, o, "name"))
	rt.passRaw(ks, out)
	return rt.pushStream(L, out, err)
}

func (rt *Runtime) sForeach(L *lua.LState) int {
	ks := rt.checkStream(L)
	fn := L.CheckFunction(2)
	o := options(L, 3, "foreach", namedOpts)
	rt.raise(L, ks.Foreach(rt.foreachAction(fn), optString(L, o, "name")))
	return 0
}

func (rt *Runtime) sPrint(L *lua.LState) int {
	ks := rt.checkStream(L)
	o := options(L, 2, "print", printedOpts)
	rt.raise(L, ks.Print(rt.opts.Stdout, optString(L, o, "label"), formatValue, optString(L, o, "name")))
	return 0
}

func (rt *Runtime) sMerge(L *lua.LState) int {
	ks := rt.checkStream(L)
	var other *pipeline.KStream
	if ud, ok := L.Get(2).(*lua.LUserData); ok {
		other, _ = ud.Value.(*pipeline.KStream)
	}
	if other == nil {
		L.ArgError(2, "merge needs another KStream")
	}
	o := options(L, 3, "merge", namedOpts)
	out, err := ks.Merge(other, optString(L, o, "name"))
	return rt.pushStream(L, out, err)
}

func (rt *Runtime) sTo(L *lua.LState) int {
	ks := rt.checkStream(L)
	o := options(L, 3, "to", producedOpts)
	p := pipeline.Produced{Name: optString(L, o, "name"), Serdes: rt.serdesOpt(L, o)}
	if _, ok := p.Serdes.Value.(*schemas.Serde); !ok {
		rt.endRaw(ks)
		rt.endTables(ks)
	}
	if fn := streamPartitioner(L, o, "to"); fn != nil {
		p.Partitioner = rt.partitioner(fn)
		rt.endTables(ks) // it would see the table
	}
	switch t := L.Get(2).(type) {
	case lua.LString:
		rt.raise(L, ks.To(string(t), p))
	case *lua.LFunction:
		rt.endTables(ks) // it would see the table
		p.ExtractorName = "lua function at " + defined(t)
		rt.raise(L, ks.ToExtractor(rt.topicExtractor(t), p))
	default:
		L.ArgError(2, "to needs a topic name or a topic extractor function(key, value, r)")
	}
	return 0
}

func (rt *Runtime) sRepartition(L *lua.LState) int {
	ks := rt.checkStream(L)
	o := options(L, 2, "repartition", repartOpts)
	r := pipeline.Repartitioned{Name: optString(L, o, "name"), Serdes: rt.serdesOpt(L, o)}
	switch n := o.RawGetString("numberOfPartitions").(type) {
	case *lua.LNilType:
	case lua.LNumber:
		if n < 1 || float64(n) != float64(int32(n)) {
			L.RaiseError("numberOfPartitions must be a positive integer, not %v", n)
		}
		r.NumPartitions = int32(n)
	default:
		L.RaiseError("numberOfPartitions must be a number")
	}
	if fn := streamPartitioner(L, o, "repartition"); fn != nil {
		r.Partitioner = rt.partitioner(fn)
	}
	out, err := ks.Repartition(r)
	return rt.pushStream(L, out, err)
}

// streamPartitioner reads Produced's and Repartitioned's partitioner, given as partitioner
// or as streamPartitioner, Kafka's name; both at once is an error.
func streamPartitioner(L *lua.LState, o *lua.LTable, what string) *lua.LFunction {
	short, long := optFunction(L, o, "partitioner"), optFunction(L, o, "streamPartitioner")
	if short != nil && long != nil {
		L.RaiseError("%s: give partitioner or streamPartitioner (Kafka's name for it), not both", what)
	}
	if long != nil {
		return long
	}
	return short
}

// sSplit implements stream:split({name=}) returning a BranchedKStream whose branch(pred,
// {name=, withFunction=, withConsumer=}) chains and whose defaultBranch/noDefaultBranch
// return the table of branches keyed by branch name, as Kafka Streams' Map<String, KStream>.
func (rt *Runtime) sSplit(L *lua.LState) int {
	ks := rt.checkStream(L)
	o := options(L, 2, "split", namedOpts)
	bs, err := ks.Split(optString(L, o, "name"))
	rt.raise(L, err)
	result := L.NewTable()
	ud := L.NewUserData()
	ud.Value = bs
	add := func(L *lua.LState, pred *lua.LFunction, oi int) {
		bo := options(L, oi, "branch", branchedOpts)
		var p pipeline.Predicate
		if pred != nil {
			p = rt.predicate(pred)
		}
		var (
			branchKS *pipeline.KStream
			full     string
			err      error
		)
		if pred != nil {
			branchKS, full, err = bs.Branch(p, optString(L, bo, "name"))
		} else {
			branchKS, full, err = bs.DefaultBranch(optString(L, bo, "name"))
		}
		rt.raise(L, err)
		branchUD := rt.wrapStream(branchKS)
		fnWith := optFunction(L, bo, "withFunction")
		fnCons := optFunction(L, bo, "withConsumer")
		switch {
		case fnWith != nil && fnCons != nil:
			L.RaiseError("branch: withFunction and withConsumer exclude each other")
		case fnCons != nil:
			L.Push(fnCons)
			L.Push(branchUD)
			L.Call(1, 0)
		case fnWith != nil:
			L.Push(fnWith)
			L.Push(branchUD)
			L.Call(1, 1)
			if ret := rt.pop(); ret != lua.LNil {
				result.RawSetString(full, ret)
			}
		default:
			result.RawSetString(full, branchUD)
		}
	}
	L.SetMetatable(ud, rt.typeMetatable("BranchedKStream", map[string]lua.LGFunction{
		"branch": func(L *lua.LState) int {
			add(L, L.CheckFunction(2), 3)
			L.Push(ud)
			return 1
		},
		"defaultBranch": func(L *lua.LState) int {
			add(L, nil, 2)
			L.Push(result)
			return 1
		},
		"noDefaultBranch": func(L *lua.LState) int {
			rt.raise(L, bs.NoDefaultBranch())
			L.Push(result)
			return 1
		},
	}))
	L.Push(ud)
	return 1
}

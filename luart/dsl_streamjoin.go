package luart

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// joinWindowsClass is stoat.JoinWindows: ofTimeDifferenceWithNoGrace(d) and
// ofTimeDifferenceAndGrace(d, grace), then :before(d) and :after(d) on the result
// (durations in ms or "10s" strings); and the deprecated of(d) and :grace(g), which keep
// Kafka Streams' old join semantics, with a warning from validate.
func (rt *Runtime) joinWindowsClass() *lua.LTable {
	L := rt.L
	cls := L.NewTable()
	var mk func(L *lua.LState, w pipeline.JoinWindows) int
	var grace lua.LGFunction
	bound := func(after bool) lua.LGFunction {
		return func(L *lua.LState) int {
			w := checkValue[pipeline.JoinWindows](L, "JoinWindows")
			d, err := durationMs(L.Get(2))
			if err != nil {
				L.ArgError(2, err.Error())
			}
			if after {
				w.After = d
			} else {
				w.Before = d
			}
			return mk(L, w)
		}
	}
	mk = func(L *lua.LState, w pipeline.JoinWindows) int {
		rt.raise(L, w.Validate())
		L.Push(rt.wrap(L, "JoinWindows", w, map[string]lua.LGFunction{
			"before": bound(false),
			"after":  bound(true),
			"grace":  grace,
		}))
		return 1
	}
	grace = func(L *lua.LState) int {
		w := checkValue[pipeline.JoinWindows](L, "JoinWindows")
		if !w.SpuriousResultFixOff {
			L.RaiseError("JoinWindows:grace: cannot call grace() after setting grace value via ofTimeDifferenceAndGrace or ofTimeDifferenceWithNoGrace")
		}
		g, err := durationMs(L.Get(2))
		if err != nil {
			L.ArgError(2, err.Error())
		}
		rt.deprecatedJoinWindows("JoinWindows:grace(afterWindowEnd)")
		w.Grace = g
		return mk(L, w)
	}
	cls.RawSetString("ofTimeDifferenceWithNoGrace", L.NewFunction(func(L *lua.LState) int {
		d, err := durationMs(L.Get(1))
		if err != nil {
			L.ArgError(1, err.Error())
		}
		return mk(L, pipeline.JoinWindows{Before: d, After: d})
	}))
	cls.RawSetString("of", L.NewFunction(func(L *lua.LState) int {
		d, err := durationMs(L.Get(1))
		if err != nil {
			L.ArgError(1, err.Error())
		}
		rt.deprecatedJoinWindows("JoinWindows.of(timeDifference)")
		return mk(L, pipeline.DeprecatedJoinWindows(d))
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
		return mk(L, pipeline.JoinWindows{Before: d, After: d, Grace: grace})
	}))
	return cls
}

// deprecatedJoinWindows warns, as javac does for Kafka Streams' deprecated JoinWindows
// methods, that what keeps the old semantics.
func (rt *Runtime) deprecatedJoinWindows(what string) {
	rt.Warnings = append(rt.Warnings, fmt.Sprintf("%s: %s is deprecated since Kafka Streams 3.0: use ofTimeDifferenceWithNoGrace or ofTimeDifferenceAndGrace; "+
		"until then a left or outer join emits a record without a partner at once, joined with nil, and again when its partner arrives (the spurious-result fix, KAFKA-10847, is off)", rt.where(), what))
}

// streamJoiner wraps a stream-stream joiner chosen by arity, as valueJoiner does:
// function(lv, rv, r) or function(k, lv, rv, r); the side without a partner is nil.
func (rt *Runtime) streamJoiner(fn *lua.LFunction) pipeline.StreamValueJoiner {
	withKey := fn.Proto == nil || fn.Proto.NumParameters >= 3 || fn.Proto.IsVarArg != 0
	return func(rec pipeline.Record, left, right any) (any, error) {
		L := rt.L
		L.Push(fn)
		n := 3
		if withKey {
			L.Push(rt.toLua(rec.Key))
			n++
		}
		L.Push(rt.toLua(left))
		L.Push(rt.toLua(right))
		L.Push(rt.rctx.set(&rec))
		if err := rt.pcall(n, 1); err != nil {
			return nil, err
		}
		return rt.fromLuaResult(fn, "joiner")
	}
}

// sJoinStream implements stream:join/leftJoin/outerJoin(otherStream, joiner, JoinWindows
// [, {name=, storeName=}]).
func (rt *Runtime) sJoinStream(L *lua.LState, ks, other *pipeline.KStream, kind pipeline.StreamJoinKind) int {
	fn := L.CheckFunction(3)
	ud, ok := L.Get(4).(*lua.LUserData)
	var w pipeline.JoinWindows
	if ok {
		w, ok = ud.Value.(pipeline.JoinWindows)
	}
	if !ok {
		L.ArgError(4, "a stream-stream join needs join windows, e.g. stoat.JoinWindows.ofTimeDifferenceWithNoGrace(\"5m\")")
	}
	out, err := ks.JoinStream(other, kind, rt.streamJoiner(fn), w, rt.streamJoinedOpt(L, 5))
	return rt.pushStream(L, out, err)
}

// streamJoinedOpt reads the StreamJoined options {name=, storeName=, keySerde=,
// valueSerde=, otherValueSerde=, thisStoreSupplier=, otherStoreSupplier=, logging=}; a
// store supplier is {name=, retention=, windowSize=, retainDuplicates=}, the arguments
// of Stores.persistentWindowStore.
func (rt *Runtime) streamJoinedOpt(L *lua.LState, i int) pipeline.StreamJoined {
	o := options(L, i, "join", streamJoinOpts)
	sj := pipeline.StreamJoined{Name: optString(L, o, "name"), StoreName: optString(L, o, "storeName"),
		Serdes: rt.serdesOpt(L, o), OtherValueSerde: rt.serdeOpt(L, o, "otherValueSerde")}
	sj.LoggingDisabled, sj.TopicConfig = loggingOpt(L, o, "join")
	sj.ThisStore = windowStoreSupplierOpt(L, o, "thisStoreSupplier")
	sj.OtherStore = windowStoreSupplierOpt(L, o, "otherStoreSupplier")
	return sj
}

func windowStoreSupplierOpt(L *lua.LState, o *lua.LTable, key string) *pipeline.WindowStoreSupplier {
	v := o.RawGetString(key)
	if v == lua.LNil {
		return nil
	}
	if _, ok := v.(*lua.LTable); !ok {
		L.RaiseError("%s must be a window store supplier {name=, retention=, windowSize=, retainDuplicates=}, not a %s", key, v.Type())
	}
	L.Push(v)
	so := options(L, L.GetTop(), key, windowSupplierOpts)
	L.Pop(1)
	sup := &pipeline.WindowStoreSupplier{Name: optString(L, so, "name"), RetainDuplicates: optBool(L, so, "retainDuplicates")}
	if sup.Name == "" {
		L.RaiseError("%s needs a name", key)
	}
	for _, d := range []struct {
		opt string
		dst *int64
	}{{"retention", &sup.Retention}, {"windowSize", &sup.WindowSize}} {
		ms, err := durationMs(so.RawGetString(d.opt))
		if err != nil {
			L.RaiseError("%s %q: %s: %v", key, sup.Name, d.opt, err)
		}
		*d.dst = ms
	}
	return sup
}

// sOuterJoin implements stream:outerJoin(otherStream, ...): only streams have outer joins.
func (rt *Runtime) sOuterJoin(L *lua.LState) int {
	ks := rt.checkStream(L)
	ud, ok := L.Get(2).(*lua.LUserData)
	var other *pipeline.KStream
	if ok {
		other, ok = ud.Value.(*pipeline.KStream)
	}
	if !ok {
		L.ArgError(2, "outerJoin needs a KStream")
	}
	return rt.sJoinStream(L, ks, other, pipeline.OuterStreamJoin)
}

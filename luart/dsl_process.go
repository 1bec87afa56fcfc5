package luart

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// bAddStateStore implements b:addStateStore{name=, type=, keySerde=, valueSerde=, logging=,
// retention=, windowSize=, retainDuplicates=, historyRetention=, headers=}.
func (rt *Runtime) bAddStateStore(L *lua.LState) int {
	rt.checkBuilder(L)
	rt.raise(L, rt.builder.AddStateStore(rt.storeSpecArg(L, 2)))
	return 0
}

// storeSpecArg reads the store table at stack index i: what Kafka Streams' Stores.*
// builders take.
func (rt *Runtime) storeSpecArg(L *lua.LState, i int) pipeline.StoreSpec {
	o := options(L, i, "addStateStore", storeSpecOpts)
	spec := pipeline.StoreSpec{Name: optString(L, o, "name"), Serdes: rt.serdesOpt(L, o), Logged: true}
	typ := optString(L, o, "type")
	// required lists the options a type needs, as the arguments of Kafka Streams' Stores.*.
	var required []string
	switch typ {
	case "", "keyValue":
		spec.Type = pipeline.KeyValueStoreType
	case "timestampedKeyValue":
		spec.Type = pipeline.TimestampedKeyValueStoreType
	case "window":
		spec.Type, required = pipeline.WindowStoreType, []string{"retention", "windowSize"}
	case "timestampedWindow":
		spec.Type, required = pipeline.TimestampedWindowStoreType, []string{"retention", "windowSize"}
	case "session":
		spec.Type, required = pipeline.SessionStoreType, []string{"retention"}
	case "versionedKeyValue":
		spec.Type, required = pipeline.VersionedKeyValueStoreType, []string{"historyRetention"}
	default:
		L.RaiseError("addStateStore: unknown type %q (keyValue, timestampedKeyValue, window, timestampedWindow, session, versionedKeyValue)", typ)
	}
	for _, opt := range required {
		if o.RawGetString(opt) == lua.LNil {
			L.RaiseError("addStateStore %q: a %s store needs %s", spec.Name, spec.Type, strings.Join(required, " and "))
		}
	}
	for _, d := range []struct {
		opt string
		dst *int64
	}{{"retention", &spec.Retention}, {"windowSize", &spec.WindowSize}, {"historyRetention", &spec.HistoryRetention}} {
		opt, dst := d.opt, d.dst
		v := o.RawGetString(opt)
		if v == lua.LNil {
			continue
		}
		if !slices.Contains(required, opt) {
			L.RaiseError("addStateStore %q: %s does not apply to %s stores", spec.Name, opt, spec.Type)
		}
		ms, err := durationMs(v)
		if err != nil {
			L.RaiseError("addStateStore %q: %s: %v", spec.Name, opt, err)
		}
		*dst = ms
	}
	if v := o.RawGetString("logging"); v != lua.LNil {
		spec.Logged = optBool(L, o, "logging")
	}
	spec.RetainDuplicates = optBool(L, o, "retainDuplicates")
	spec.Headers = optBool(L, o, "headers")
	return spec
}

// sProcess implements stream:process(supplier, {stores=, name=}) and processValues. The
// supplier is a function returning a processor table {init=, process=, close=} (one per
// task, as Kafka Streams' ProcessorSupplier), or such a table itself, shared by all tasks.
func (rt *Runtime) sProcess(fixedKey bool) lua.LGFunction {
	return func(L *lua.LState) int {
		ks := rt.checkStream(L)
		what := "process"
		if fixedKey {
			what = "processValues"
		}
		arg := L.Get(2)
		if _, ok := arg.(*lua.LFunction); !ok {
			if _, ok := arg.(*lua.LTable); !ok {
				L.ArgError(2, what+" needs a processor table {init=, process=, close=} or a function returning one")
			}
		}
		o := options(L, 3, what, processOpts)
		var stores []string
		if st, ok := o.RawGetString("stores").(*lua.LTable); ok {
			for i := 1; i <= st.Len(); i++ {
				stores = append(stores, st.RawGetInt(i).String())
			}
		}
		supplier := rt.processorSupplier(arg, fixedKey)
		var out *pipeline.KStream
		var err error
		if fixedKey {
			out, err = ks.ProcessValues(supplier, stores, optString(L, o, "name"))
		} else {
			out, err = ks.Process(supplier, stores, optString(L, o, "name"))
		}
		return rt.pushStream(L, out, err)
	}
}

// processorSupplier makes a task's processor from a supplier function or a shared table.
func (rt *Runtime) processorSupplier(arg lua.LValue, fixedKey bool) pipeline.ProcessorSupplier {
	where := rt.where()
	return func() (pipeline.UserProcessor, error) {
		tbl, err := rt.processorTable(arg, where)
		if err != nil {
			return nil, err
		}
		return &luaProcessor{rt: rt, tbl: tbl, fixedKey: fixedKey}, nil
	}
}

func (rt *Runtime) processorTable(arg lua.LValue, where string) (*lua.LTable, error) {
	var v lua.LValue = arg
	if fn, ok := arg.(*lua.LFunction); ok {
		rt.L.Push(fn)
		if err := rt.pcall(0, 1); err != nil {
			return nil, err
		}
		v = rt.pop()
	}
	tbl, ok := v.(*lua.LTable)
	if !ok {
		return nil, fmt.Errorf("%s: the processor supplier must return a table {init=, process=, close=}, not a %s", where, v.Type())
	}
	if _, ok := tbl.RawGetString("process").(*lua.LFunction); !ok {
		return nil, fmt.Errorf("%s: the processor table needs a process function", where)
	}
	return tbl, nil
}

// luaProcessor is a UserProcessor whose methods are Lua functions: init(ctx),
// process(ctx, key, value, r) (processValues: also key, read-only) and close(ctx).
type luaProcessor struct {
	rt       *Runtime
	tbl      *lua.LTable
	fixedKey bool
	pc       *pipeline.ProcessorContext
	ctxUD    *lua.LUserData
}

func (p *luaProcessor) method(name string) *lua.LFunction {
	fn, _ := p.tbl.RawGetString(name).(*lua.LFunction)
	return fn
}

func (p *luaProcessor) Init(pc *pipeline.ProcessorContext) error {
	p.pc = pc
	p.ctxUD = p.rt.newProcessorContext(p)
	if fn := p.method("init"); fn != nil {
		p.rt.L.Push(fn)
		p.rt.L.Push(p.ctxUD)
		return p.rt.pcall(1, 0)
	}
	return nil
}

func (p *luaProcessor) Process(rec pipeline.Record) error {
	rt := p.rt
	rt.L.Push(p.method("process"))
	rt.L.Push(p.ctxUD)
	rt.L.Push(rt.toLua(rec.Key))
	rt.L.Push(rt.toLua(rec.Value))
	rt.L.Push(rt.rctx.set(&rec))
	err := rt.pcall(4, 0)
	rt.closeIterators()
	return err
}

func (p *luaProcessor) Close() error {
	if fn := p.method("close"); fn != nil {
		p.rt.L.Push(fn)
		p.rt.L.Push(p.ctxUD)
		return p.rt.pcall(1, 0)
	}
	return nil
}

// newProcessorContext builds the ctx userdata a Lua processor gets.
func (rt *Runtime) newProcessorContext(p *luaProcessor) *lua.LUserData {
	L := rt.L
	ud := L.NewUserData()
	ud.Value = p
	L.SetMetatable(ud, rt.typeMetatable("ProcessorContext", map[string]lua.LGFunction{
		"forward":             rt.ctxForward,
		"schedule":            rt.ctxSchedule,
		"getStateStore":       rt.ctxGetStateStore,
		"partition":           func(L *lua.LState) int { L.Push(lua.LNumber(rt.checkCtx(L).pc.Partition())); return 1 },
		"taskId":              func(L *lua.LState) int { L.Push(lua.LString(rt.checkCtx(L).pc.TaskID())); return 1 },
		"currentStreamTimeMs": func(L *lua.LState) int { L.Push(lua.LNumber(rt.checkCtx(L).pc.StreamTime())); return 1 },
		"currentSystemTimeMs": func(L *lua.LState) int { L.Push(lua.LNumber(rt.checkCtx(L).pc.WallClock())); return 1 },
	}))
	return ud
}

func (rt *Runtime) checkCtx(L *lua.LState) *luaProcessor {
	if ud, ok := L.Get(1).(*lua.LUserData); ok {
		if p, ok := ud.Value.(*luaProcessor); ok {
			return p
		}
	}
	L.RaiseError("call ProcessorContext methods with ':' (ctx:forward(...))")
	return nil
}

// ctxForward implements ctx:forward(key, value [, {timestamp=, headers=, to=}]); in
// processValues, ctx:forward(value [, opts]).
func (rt *Runtime) ctxForward(L *lua.LState) int {
	p := rt.checkCtx(L)
	var rec pipeline.Record
	if cur := p.pc.Current(); cur != nil {
		rec = *cur
	} else {
		rec = pipeline.Record{Timestamp: p.pc.StreamTime(), Partition: p.pc.Partition(), Offset: -1}
	}
	optIdx := 4
	var err error
	if p.fixedKey {
		optIdx = 3
		if rec.Value, err = rt.fromLua(L.Get(2)); err != nil {
			L.RaiseError("forward: value: %v", err)
		}
	} else {
		if rec.Key, err = rt.fromLua(L.Get(2)); err != nil {
			L.RaiseError("forward: key: %v", err)
		}
		if rec.Value, err = rt.fromLua(L.Get(3)); err != nil {
			L.RaiseError("forward: value: %v", err)
		}
	}
	o := options(L, optIdx, "forward", forwardOpts)
	switch ts := o.RawGetString("timestamp").(type) {
	case *lua.LNilType:
	case lua.LNumber:
		// Kafka Streams' Record refuses a negative timestamp; int64 of a number out of its
		// range is math.MinInt64, and a fraction would be cut off unseen.
		if f := float64(ts); f != math.Trunc(f) || f < 0 || f >= math.MaxInt64 {
			L.RaiseError("forward: timestamp must be milliseconds as a non-negative integer, not %v", ts)
		}
		rec.Timestamp = int64(ts)
	default:
		L.RaiseError("forward: timestamp must be milliseconds as an integer, not a %s", ts.Type())
	}
	if h := o.RawGetString("headers"); h != lua.LNil {
		if rec.Headers, err = rt.headersFromLua(h); err != nil {
			L.RaiseError("forward: headers: %v", err)
		}
	}
	// What the record runs into downstream counts against this call's budget.
	if to := optString(L, o, "to"); to != "" {
		err = p.pc.ForwardTo(to, rec)
	} else {
		err = p.pc.Forward(rec)
	}
	rt.raise(L, err)
	return 0
}

// ctxSchedule implements ctx:schedule(interval, "stream-time"|"wall-clock", function(ts)).
func (rt *Runtime) ctxSchedule(L *lua.LState) int {
	p := rt.checkCtx(L)
	interval, err := durationMs(L.Get(2))
	if err != nil {
		L.ArgError(2, err.Error())
	}
	var typ pipeline.PunctuationType
	switch s := L.CheckString(3); s {
	case "stream-time", "STREAM_TIME":
		typ = pipeline.StreamTime
	case "wall-clock", "WALL_CLOCK_TIME":
		typ = pipeline.WallClockTime
	default:
		L.ArgError(3, fmt.Sprintf("punctuation type must be \"stream-time\" or \"wall-clock\", not %q", s))
	}
	fn := L.CheckFunction(4)
	c, err := p.pc.Schedule(interval, typ, func(ts int64) error {
		rt.L.Push(fn)
		rt.L.Push(lua.LNumber(ts))
		err := rt.pcall(1, 0)
		rt.closeIterators()
		return err
	})
	rt.raise(L, err)
	ud := L.NewUserData()
	ud.Value = c
	L.SetMetatable(ud, rt.typeMetatable("Cancellable", map[string]lua.LGFunction{
		"cancel": func(L *lua.LState) int { c.Cancel(); return 0 },
	}))
	L.Push(ud)
	return 1
}

// ctxGetStateStore returns the store userdata for the store's kind.
func (rt *Runtime) ctxGetStateStore(L *lua.LState) int {
	p := rt.checkCtx(L)
	name := L.CheckString(2)
	typ, err := p.pc.StoreType(name)
	rt.raise(L, err)
	var ud *lua.LUserData
	switch typ {
	case pipeline.WindowStoreType, pipeline.TimestampedWindowStoreType:
		s, err := p.pc.WindowStore(name)
		rt.raise(L, err)
		ud = rt.wrapWindowStore(s)
	case pipeline.SessionStoreType:
		s, err := p.pc.SessionStore(name)
		rt.raise(L, err)
		ud = rt.wrapSessionStore(s)
	case pipeline.VersionedKeyValueStoreType:
		s, err := p.pc.VersionedStore(name)
		rt.raise(L, err)
		ud = rt.wrapVersionedStore(s)
	default:
		s, err := p.pc.StateStore(name)
		rt.raise(L, err)
		ud = rt.wrapStore(s)
	}
	L.Push(ud)
	return 1
}

// headersFromLua reads headers given as name → value or as a list of {key=, value=}, or a
// headers table as the runtime handed it over (r.headers, a headers-aware store's get): its
// full list.
func (rt *Runtime) headersFromLua(v lua.LValue) (pipeline.Headers, error) {
	t, ok := v.(*lua.LTable)
	if !ok {
		return nil, fmt.Errorf("headers must be a table, not a %s", v.Type())
	}
	if h, ok := rt.keptHeaders(t); ok {
		return h, nil
	}
	var out pipeline.Headers
	value := func(x lua.LValue) ([]byte, error) {
		switch y := x.(type) {
		case lua.LString:
			return []byte(y), nil
		case *lua.LUserData:
			if y == rt.null {
				return nil, nil
			}
		}
		return nil, fmt.Errorf("a header value must be a string or stoat.null, not a %s", x.Type())
	}
	if t.Len() > 0 {
		for i := 1; i <= t.Len(); i++ {
			e, ok := t.RawGetInt(i).(*lua.LTable)
			if !ok {
				return nil, fmt.Errorf("headers[%d] must be {key=, value=}", i)
			}
			b, err := value(e.RawGetString("value"))
			if err != nil {
				return nil, err
			}
			out = append(out, pipeline.Header{Key: e.RawGetString("key").String(), Value: b})
		}
		return out, nil
	}
	var firstErr error
	t.ForEach(func(k, x lua.LValue) {
		b, err := value(x)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		out = append(out, pipeline.Header{Key: k.String(), Value: b})
	})
	return out, firstErr
}

// durationMs reads a duration: milliseconds, or a string like "250ms", "10s", "5m", "1h".
func durationMs(v lua.LValue) (int64, error) {
	switch x := v.(type) {
	case lua.LNumber:
		// int64 of NaN or of a number out of its range is math.MinInt64 (amd64), and a
		// fraction would be cut off unseen.
		if f := float64(x); f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
			return 0, fmt.Errorf("invalid duration %s: milliseconds must be a whole number of at most 63 bits", x)
		}
		return int64(x), nil
	case lua.LString:
		s := strings.TrimSpace(string(x))
		for _, u := range []struct {
			suffix string
			ms     int64
		}{{"ms", 1}, {"s", 1000}, {"m", 60_000}, {"h", 3_600_000}, {"d", 86_400_000}} {
			if strings.HasSuffix(s, u.suffix) {
				if n, err := strconv.ParseInt(strings.TrimSuffix(s, u.suffix), 10, 64); err == nil && n >= 0 {
					if n > math.MaxInt64/u.ms {
						return 0, fmt.Errorf("invalid duration %q: more than 63 bits of milliseconds", s)
					}
					return n * u.ms, nil
				}
				break
			}
		}
		return 0, fmt.Errorf("invalid duration %q (use milliseconds or e.g. \"250ms\", \"10s\", \"5m\", \"1h\")", s)
	}
	return 0, fmt.Errorf("a duration is milliseconds or a string like \"10s\", not a %s", v.Type())
}

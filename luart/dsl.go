package luart

import (
	"fmt"
	"sort"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/luart/suggest"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// removed lists, by type, the methods (and for the window classes, the functions of the
// class) Kafka Streams 4.x no longer has or StoatFlow leaves out as deprecated, with what
// replaces them.
var removed = map[string]map[string]string{
	"KStream": {
		"through":             "KStream#through was removed in Kafka Streams 4.0; use repartition()",
		"branch":              "KStream#branch was removed in Kafka Streams 4.0; use split():branch(...)",
		"transform":           "KStream#transform was removed in Kafka Streams 4.0; use process()",
		"transformValues":     "KStream#transformValues was removed in Kafka Streams 4.0; use processValues()",
		"flatTransform":       "KStream#flatTransform was removed in Kafka Streams 4.0; use process()",
		"flatTransformValues": "KStream#flatTransformValues was removed in Kafka Streams 4.0; use processValues()",
	},
	"stoat.TimeWindows": {
		"of": "TimeWindows.of was removed in Kafka Streams 4.0; use s.TimeWindows.ofSizeWithNoGrace(size) or s.TimeWindows.ofSizeAndGrace(size, grace)",
	},
	"TimeWindows": {
		"grace": "TimeWindows#grace was removed in Kafka Streams 4.0; use s.TimeWindows.ofSizeAndGrace(size, grace)",
	},
	"stoat.SessionWindows": {
		"with": "SessionWindows.with was removed in Kafka Streams 4.0; use s.SessionWindows.ofInactivityGapWithNoGrace(gap) or s.SessionWindows.ofInactivityGapAndGrace(gap, grace)",
	},
	"SessionWindows": {
		"grace": "SessionWindows#grace was removed in Kafka Streams 4.0; use s.SessionWindows.ofInactivityGapAndGrace(gap, grace)",
	},
	"stoat.SlidingWindows": {
		"withTimeDifferenceAndGrace": "SlidingWindows.withTimeDifferenceAndGrace was removed in Kafka Streams 4.0; use s.SlidingWindows.ofTimeDifferenceAndGrace(d, grace) or s.SlidingWindows.ofTimeDifferenceWithNoGrace(d)",
	},
}

// noSuchName raises the error for a name a DSL type or class does not have: what replaces
// it when Kafka Streams removed it, else the known name closest to it, else all of them.
func noSuchName(L *lua.LState, typeName, kind, name string, known []string) {
	if why, ok := removed[typeName][name]; ok {
		L.RaiseError("%s", why)
	}
	if best, ok := suggest.Closest(name, known); ok {
		L.RaiseError("%s has no %s %q; did you mean %q?", typeName, kind, name, best)
	}
	L.RaiseError("%s has no %s %q (it has: %s)", typeName, kind, name, strings.Join(known, ", "))
}

// classTable makes cls, the table of a DSL class (stoat.TimeWindows, ...), raise the
// error noSuchName words for a name it does not have.
func (rt *Runtime) classTable(name string, cls *lua.LTable) *lua.LTable {
	L := rt.L
	var known []string
	cls.ForEach(func(k, _ lua.LValue) { known = append(known, k.String()) })
	sort.Strings(known)
	rt.built[name] = known
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		noSuchName(L, name, "function", L.CheckString(2), known)
		return 0
	}))
	L.SetMetatable(cls, mt)
	return cls
}

func (rt *Runtime) stoatModule() *lua.LTable {
	L := rt.L
	if mod, ok := L.GetField(L.Get(lua.RegistryIndex), "stoat.module").(*lua.LTable); ok {
		return mod
	}
	mod := L.NewTable()
	builderUD := L.NewUserData()
	builderUD.Value = rt.builder
	L.SetMetatable(builderUD, rt.typeMetatable("StreamsBuilder", map[string]lua.LGFunction{
		"stream":         rt.bStream,
		"table":          rt.bTable,
		"globalTable":    rt.bGlobalTable,
		"addStateStore":  rt.bAddStateStore,
		"addGlobalStore": rt.bAddGlobalStore,
	}))
	mod.RawSetString("builder", L.NewFunction(func(L *lua.LState) int {
		L.Push(builderUD)
		return 1
	}))
	mod.RawSetString("serde", L.NewFunction(rt.newLuaSerde))
	for fn, name := range schemaSerdeFunctions {
		mod.RawSetString(fn, L.NewFunction(rt.newSchemaSerde(fn, name)))
	}
	mod.RawSetString("null", rt.null)
	mod.RawSetString("array", L.NewFunction(func(L *lua.LState) int {
		t := L.OptTable(1, L.NewTable())
		L.SetMetatable(t, rt.arrayMT)
		L.Push(t)
		return 1
	}))
	for name, cls := range map[string]*lua.LTable{
		"TimeWindows":     rt.timeWindowsClass(),
		"EmitStrategy":    rt.emitStrategyClass(),
		"Suppressed":      rt.suppressedClass(),
		"SessionWindows":  rt.sessionWindowsClass(),
		"JoinWindows":     rt.joinWindowsClass(),
		"SlidingWindows":  rt.slidingWindowsClass(),
		"WindowedSerdes":  rt.windowedSerdesClass(),
		"AutoOffsetReset": rt.autoOffsetResetClass(),
	} {
		mod.RawSetString(name, rt.classTable("stoat."+name, cls))
	}
	L.SetField(L.Get(lua.RegistryIndex), "stoat.module", mod)
	return mod
}

// typeMetatable builds the metatable of a DSL type: its methods, plus clear errors for
// Kafka Streams methods that no longer exist.
func (rt *Runtime) typeMetatable(typeName string, methods map[string]lua.LGFunction) *lua.LTable {
	L := rt.L
	mt := L.NewTable()
	idx := L.NewTable()
	for name, fn := range methods {
		idx.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			rt.endRawArgs(L, typeName, name)
			return fn(L)
		}))
	}
	known := make([]string, 0, len(methods))
	for name := range methods {
		known = append(known, name)
	}
	sort.Strings(known)
	rt.built[typeName] = known
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		name := L.CheckString(2)
		if fn := idx.RawGetString(name); fn != lua.LNil {
			L.Push(fn)
			return 1
		}
		noSuchName(L, typeName, "method", name, known)
		return 0
	}))
	mt.RawSetString("__tostring", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LString(typeName))
		return 1
	}))
	return mt
}

// options reads an options table at stack index i, refusing keys not in the set.
func options(L *lua.LState, i int, what string, set *optionSet) *lua.LTable {
	v := L.Get(i)
	if v == lua.LNil {
		return L.NewTable()
	}
	t, ok := v.(*lua.LTable)
	if !ok {
		L.ArgError(i, fmt.Sprintf("%s options must be a table, not a %s", what, v.Type()))
		return nil
	}
	t.ForEach(func(k, _ lua.LValue) {
		name := k.String()
		for _, f := range set.fields {
			if f.name == name {
				return
			}
		}
		allowed := set.names()
		if best, ok := suggest.Closest(name, allowed); ok {
			L.RaiseError("%s: unknown option %q; did you mean %q? (allowed: %s)", what, name, best, strings.Join(allowed, ", "))
		}
		L.RaiseError("%s: unknown option %q (allowed: %s)", what, name, strings.Join(allowed, ", "))
	})
	return t
}

func optString(L *lua.LState, t *lua.LTable, key string) string {
	switch v := t.RawGetString(key).(type) {
	case *lua.LNilType:
		return ""
	case lua.LString:
		return string(v)
	default:
		L.RaiseError("option %s must be a string, not a %s", key, v.Type())
		return ""
	}
}

func optFunction(L *lua.LState, t *lua.LTable, key string) *lua.LFunction {
	switch v := t.RawGetString(key).(type) {
	case *lua.LNilType:
		return nil
	case *lua.LFunction:
		return v
	default:
		L.RaiseError("option %s must be a function, not a %s", key, v.Type())
		return nil
	}
}

func optBool(L *lua.LState, t *lua.LTable, key string) bool {
	switch v := t.RawGetString(key).(type) {
	case *lua.LNilType:
		return false
	case lua.LBool:
		return bool(v)
	default:
		L.RaiseError("option %s must be a boolean, not a %s", key, v.Type())
		return false
	}
}

// windowedSerde is a serde made by s.WindowedSerdes.
type windowedSerde struct{ pipeline.Serde }

// windowedSerdesClass is stoat.WindowedSerdes: timeWindowedSerdeFrom(inner, windowSize) and
// sessionWindowedSerdeFrom(inner), inner being a serde name or value, as Kafka Streams'
// WindowedSerdes builds them from a class.
func (rt *Runtime) windowedSerdesClass() *lua.LTable {
	L := rt.L
	cls := L.NewTable()
	inner := func(L *lua.LState, what string) pipeline.Serde {
		s := rt.serdeValue(L, L.Get(1), "inner serde")
		if s == nil {
			L.ArgError(1, what+" needs the inner serde, e.g. \"string\"")
		}
		return s
	}
	wrap := func(L *lua.LState, s pipeline.Serde) int {
		L.Push(rt.wrap(L, "WindowedSerde", windowedSerde{s}, map[string]lua.LGFunction{}))
		return 1
	}
	cls.RawSetString("timeWindowedSerdeFrom", L.NewFunction(func(L *lua.LState) int {
		s := inner(L, "timeWindowedSerdeFrom")
		size, err := durationMs(L.Get(2))
		if err != nil || size <= 0 {
			L.ArgError(2, "timeWindowedSerdeFrom needs the window size (a positive duration)")
		}
		return wrap(L, pipeline.TimeWindowedSerde{Inner: s, Size: size})
	}))
	cls.RawSetString("sessionWindowedSerdeFrom", L.NewFunction(func(L *lua.LState) int {
		return wrap(L, pipeline.SessionWindowedSerde{Inner: inner(L, "sessionWindowedSerdeFrom")})
	}))
	return cls
}

// topicConfig reads the changelog topic settings of withLoggingEnabled(Map): a table of
// topic config names to string, number or boolean values.
func topicConfig(L *lua.LState, v lua.LValue, what string) map[string]string {
	t, ok := v.(*lua.LTable)
	if !ok {
		L.RaiseError("%s: changelog topic settings must be a table {[\"name\"] = value}, not a %s", what, v.Type())
	}
	cfg := map[string]string{}
	t.ForEach(func(k, v lua.LValue) {
		name, ok := k.(lua.LString)
		if !ok || name == "" {
			L.RaiseError("%s: changelog topic setting names must be strings, not %s", what, k.Type())
		}
		switch v.(type) {
		case lua.LString, lua.LNumber, lua.LBool:
			cfg[string(name)] = v.String()
		default:
			L.RaiseError("%s: changelog topic setting %q must be a string, number or boolean, not a %s", what, string(name), v.Type())
		}
	})
	return cfg
}

// loggingOpt reads `logging = true | false | {topic settings}` (withLoggingEnabled,
// withLoggingDisabled, withLoggingEnabled(Map)).
func loggingOpt(L *lua.LState, t *lua.LTable, what string) (disabled bool, cfg map[string]string) {
	switch v := t.RawGetString("logging").(type) {
	case *lua.LNilType:
	case lua.LBool:
		disabled = !bool(v)
	case *lua.LTable:
		cfg = topicConfig(L, v, what)
	default:
		L.RaiseError("%s: logging must be true, false or a table of changelog topic settings, not a %s", what, v.Type())
	}
	return disabled, cfg
}

// serdeOpt resolves a serde option: a serde name, a stoat.serde{...} value, or a Schema
// Registry serde (stoat.avro{...} and friends).
func (rt *Runtime) serdeOpt(L *lua.LState, t *lua.LTable, key string) pipeline.Serde {
	return rt.serdeValue(L, t.RawGetString(key), key)
}

// serdeValue resolves a serde given as a name or a serde value; key names the option.
func (rt *Runtime) serdeValue(L *lua.LState, v lua.LValue, key string) pipeline.Serde {
	var s pipeline.Serde
	var err error
	switch v := v.(type) {
	case *lua.LNilType:
		return nil
	case lua.LString:
		if isSchemaSerdeName(string(v)) {
			s, err = rt.schemaSerdeFor(string(v), key == "keySerde", schemas.Spec{})
		} else if s, err = serdes.ByName(string(v)); err == nil {
			if tw, ok := s.(pipeline.TimeWindowedSerde); ok {
				tw.Size = rt.opts.WindowSize
				s = tw
			}
		}
	case *lua.LUserData:
		switch x := v.Value.(type) {
		case *luaSerde:
			return x
		case *schemaSerde:
			s, err = rt.schemaSerdeFor(x.name, key == "keySerde", x.spec)
		case windowedSerde:
			return x.Serde
		}
	}
	if err != nil {
		L.RaiseError("%s: %v", key, err)
	}
	if s == nil {
		L.RaiseError("option %s must be a serde name, a stoat.serde{...} or a stoat.avro/protobuf/jsonSchema{...}", key)
	}
	return s
}

func (rt *Runtime) serdesOpt(L *lua.LState, t *lua.LTable) pipeline.Serdes {
	return pipeline.Serdes{Key: rt.serdeOpt(L, t, "keySerde"), Value: rt.serdeOpt(L, t, "valueSerde")}
}

// raise raises err in Lua as its message, and keeps err so that the ScriptError the call
// ends with unwraps to it.
func (rt *Runtime) raise(L *lua.LState, err error) {
	if err != nil {
		rt.raised = err
		L.RaiseError("%v", err)
	}
}

// bStream implements b:stream(topic | {topics} | {pattern = regex}, opts).
func (rt *Runtime) bStream(L *lua.LState) int {
	rt.checkBuilder(L)
	var topics []string
	var pattern lua.LValue = lua.LNil
	switch v := L.Get(2).(type) {
	case lua.LString:
		topics = []string{string(v)}
	case *lua.LTable:
		if pattern = v.RawGetString("pattern"); pattern != lua.LNil {
			if _, ok := pattern.(lua.LString); !ok || v.Len() > 0 {
				L.ArgError(2, "a pattern source is {pattern = \"regex\"}, with no topic names beside it")
			}
		}
		for i := 1; i <= v.Len(); i++ {
			s, ok := v.RawGetInt(i).(lua.LString)
			if !ok {
				L.ArgError(2, "topics must be strings")
			}
			topics = append(topics, string(s))
		}
	default:
		L.ArgError(2, "stream needs a topic name, a list of topic names or {pattern = \"regex\"}")
	}
	o := options(L, 3, "stream", consumedOpts)
	c := pipeline.Consumed{Name: optString(L, o, "name"), Serdes: rt.serdesOpt(L, o)}
	switch ex := o.RawGetString("timestampExtractor").(type) {
	case *lua.LNilType:
	case *lua.LFunction:
		c.TimestampExtractor = rt.timestampExtractor(ex)
	case lua.LString:
		switch ex {
		case "record":
		case "wallclock":
			c.TimestampExtractor = func(pipeline.Record) (int64, error) { return rt.now(), nil }
		default:
			L.RaiseError("timestampExtractor must be a function, \"record\" or \"wallclock\", not %q", string(ex))
		}
	default:
		L.RaiseError("timestampExtractor must be a function, \"record\" or \"wallclock\"")
	}
	c.OffsetReset = offsetResetOpt(L, o)
	var ks *pipeline.KStream
	var err error
	if p, ok := pattern.(lua.LString); ok {
		ks, err = rt.builder.StreamPattern(string(p), c)
	} else {
		ks, err = rt.builder.Stream(topics, c)
	}
	rt.raise(L, err)
	rt.rawSourceFor(ks, c.Serdes.Value)
	L.Push(rt.wrapStream(ks))
	return 1
}

func (rt *Runtime) checkBuilder(L *lua.LState) {
	ud, ok := L.Get(1).(*lua.LUserData)
	if !ok || ud.Value != rt.builder {
		L.RaiseError("call builder methods with ':' (b:stream(...))")
	}
}

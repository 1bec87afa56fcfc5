package luart

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// suppressedClass is stoat.Suppressed: untilWindowCloses(bufferConfig),
// untilTimeLimit(duration, bufferConfig), :withName(n) on the result, and
// stoat.Suppressed.BufferConfig.
func (rt *Runtime) suppressedClass() *lua.LTable {
	L := rt.L
	cls := L.NewTable()
	cls.RawSetString("untilWindowCloses", L.NewFunction(func(L *lua.LState) int {
		bc := checkBufferConfig(L, 1, "untilWindowCloses")
		if bc.EmitEarlyWhenFull {
			L.ArgError(1, "untilWindowCloses needs a strict buffer: s.Suppressed.BufferConfig.unbounded(), or a limit with :shutDownWhenFull()")
		}
		L.Push(rt.wrapSuppressed(L, pipeline.Suppressed{UntilWindowCloses: true, Buffer: bc}))
		return 1
	}))
	cls.RawSetString("untilTimeLimit", L.NewFunction(func(L *lua.LState) int {
		d, err := durationMs(L.Get(1))
		if err != nil {
			L.ArgError(1, err.Error())
		}
		if d < 0 {
			L.ArgError(1, "the time limit must not be negative")
		}
		bc := checkBufferConfig(L, 2, "untilTimeLimit")
		L.Push(rt.wrapSuppressed(L, pipeline.Suppressed{TimeLimit: d, Buffer: bc}))
		return 1
	}))
	cls.RawSetString("BufferConfig", rt.classTable("stoat.Suppressed.BufferConfig", rt.bufferConfigClass()))
	return cls
}

func (rt *Runtime) wrapSuppressed(L *lua.LState, s pipeline.Suppressed) *lua.LUserData {
	return rt.wrap(L, "Suppressed", s, map[string]lua.LGFunction{
		"withName": func(L *lua.LState) int {
			s := checkValue[pipeline.Suppressed](L, "Suppressed")
			s.Name = L.CheckString(2)
			if s.Name == "" {
				L.ArgError(2, "a suppression name must not be empty")
			}
			L.Push(rt.wrapSuppressed(L, s))
			return 1
		},
	})
}

func checkBufferConfig(L *lua.LState, i int, what string) pipeline.BufferConfig {
	if ud, ok := L.Get(i).(*lua.LUserData); ok {
		if bc, ok := ud.Value.(pipeline.BufferConfig); ok {
			return bc
		}
	}
	L.ArgError(i, what+" needs a buffer config, e.g. s.Suppressed.BufferConfig.unbounded()")
	return pipeline.BufferConfig{}
}

// bufferConfigClass is stoat.Suppressed.BufferConfig: maxRecords(n) and maxBytes(n) (emit
// early when full, as in Kafka Streams), unbounded() (strict), and the with*/…WhenFull
// methods on the result.
func (rt *Runtime) bufferConfigClass() *lua.LTable {
	L := rt.L
	cls := L.NewTable()
	limit := func(L *lua.LState, i int) int64 {
		n := L.CheckInt64(i)
		if n < 0 {
			L.ArgError(i, "a buffer limit must not be negative")
		}
		return n
	}
	cls.RawSetString("maxRecords", L.NewFunction(func(L *lua.LState) int {
		L.Push(rt.wrapBufferConfig(L, pipeline.BufferConfig{MaxRecords: limit(L, 1), EmitEarlyWhenFull: true}))
		return 1
	}))
	cls.RawSetString("maxBytes", L.NewFunction(func(L *lua.LState) int {
		L.Push(rt.wrapBufferConfig(L, pipeline.BufferConfig{MaxBytes: limit(L, 1), EmitEarlyWhenFull: true}))
		return 1
	}))
	cls.RawSetString("unbounded", L.NewFunction(func(L *lua.LState) int {
		L.Push(rt.wrapBufferConfig(L, pipeline.BufferConfig{}))
		return 1
	}))
	return cls
}

func (rt *Runtime) wrapBufferConfig(L *lua.LState, bc pipeline.BufferConfig) *lua.LUserData {
	update := func(fn func(L *lua.LState, bc *pipeline.BufferConfig)) lua.LGFunction {
		return func(L *lua.LState) int {
			bc := checkValue[pipeline.BufferConfig](L, "BufferConfig")
			fn(L, &bc)
			L.Push(rt.wrapBufferConfig(L, bc))
			return 1
		}
	}
	limit := func(L *lua.LState) int64 {
		n := L.CheckInt64(2)
		if n < 0 {
			L.ArgError(2, "a buffer limit must not be negative")
		}
		return n
	}
	return rt.wrap(L, "BufferConfig", bc, map[string]lua.LGFunction{
		"withMaxRecords": update(func(L *lua.LState, bc *pipeline.BufferConfig) { bc.MaxRecords = limit(L) }),
		"withMaxBytes":   update(func(L *lua.LState, bc *pipeline.BufferConfig) { bc.MaxBytes = limit(L) }),
		"withNoBound": update(func(_ *lua.LState, bc *pipeline.BufferConfig) {
			bc.MaxRecords, bc.MaxBytes, bc.EmitEarlyWhenFull = 0, 0, false
		}),
		"shutDownWhenFull":    update(func(_ *lua.LState, bc *pipeline.BufferConfig) { bc.EmitEarlyWhenFull = false }),
		"emitEarlyWhenFull":   update(func(_ *lua.LState, bc *pipeline.BufferConfig) { bc.EmitEarlyWhenFull = true }),
		"withLoggingDisabled": update(func(_ *lua.LState, bc *pipeline.BufferConfig) { bc.LoggingDisabled, bc.TopicConfig = true, nil }),
		"withLoggingEnabled": update(func(L *lua.LState, bc *pipeline.BufferConfig) {
			bc.LoggingDisabled, bc.TopicConfig = false, nil
			if v := L.Get(2); v != lua.LNil {
				bc.TopicConfig = topicConfig(L, v, "BufferConfig:withLoggingEnabled")
			}
		}),
	})
}

// tSuppress implements table:suppress(s.Suppressed...).
func (rt *Runtime) tSuppress(L *lua.LState) int {
	t := checkValue[*pipeline.KTable](L, "KTable")
	ud, ok := L.Get(2).(*lua.LUserData)
	var s pipeline.Suppressed
	if ok {
		s, ok = ud.Value.(pipeline.Suppressed)
	}
	if !ok {
		L.ArgError(2, "suppress needs s.Suppressed.untilWindowCloses(...) or s.Suppressed.untilTimeLimit(...)")
	}
	out, err := t.Suppress(s)
	return rt.pushTable(L, out, err)
}

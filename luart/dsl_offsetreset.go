package luart

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// autoOffsetResetClass is stoat.AutoOffsetReset (KIP-1106): earliest(), latest(), none()
// and byDuration(d), the values of a source's offsetReset option.
func (rt *Runtime) autoOffsetResetClass() *lua.LTable {
	L := rt.L
	cls := L.NewTable()
	push := func(L *lua.LState, r pipeline.OffsetReset) int {
		L.Push(rt.wrap(L, "AutoOffsetReset", r, nil))
		return 1
	}
	for name, s := range map[string]pipeline.OffsetResetStrategy{
		"earliest": pipeline.ResetEarliest, "latest": pipeline.ResetLatest, "none": pipeline.ResetNone,
	} {
		cls.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			return push(L, pipeline.OffsetReset{Strategy: s})
		}))
	}
	cls.RawSetString("byDuration", L.NewFunction(func(L *lua.LState) int {
		d, err := durationMs(L.Get(1))
		if err != nil {
			L.ArgError(1, err.Error())
		}
		return push(L, pipeline.OffsetReset{Strategy: pipeline.ResetByDuration, Duration: d})
	}))
	return cls
}

// offsetResetOpt reads a source's offsetReset option: an s.AutoOffsetReset value or
// auto.offset.reset's spelling ("latest", "by_duration:PT1H").
func offsetResetOpt(L *lua.LState, o *lua.LTable) pipeline.OffsetReset {
	switch v := o.RawGetString("offsetReset").(type) {
	case *lua.LNilType:
		return pipeline.OffsetReset{}
	case lua.LString:
		r, err := pipeline.ParseOffsetReset(string(v))
		if err != nil {
			L.RaiseError("offsetReset: %v", err)
		}
		return r
	case *lua.LUserData:
		if r, ok := v.Value.(pipeline.OffsetReset); ok {
			return r
		}
	}
	L.RaiseError("offsetReset must be s.AutoOffsetReset.earliest(), latest(), none() or byDuration(d), or a string such as \"latest\"")
	return pipeline.OffsetReset{}
}

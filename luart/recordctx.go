package luart

import (
	"slices"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// recordContext is the read-only `r` every callback receives. One userdata is reused for all
// calls (a new table per record costs ~1.7 µs); fields are read from the current record on
// access, and the headers table is built only when a callback asks for it. Like Kafka
// Streams' ProcessorContext, r describes the record being processed and is valid only during
// the call.
type recordContext struct {
	rt      *Runtime
	ud      *lua.LUserData
	rec     pipeline.Record
	headers *lua.LTable // built lazily for rec; nil when not built yet
}

func newRecordContext(rt *Runtime) *recordContext {
	rc := &recordContext{rt: rt}
	L := rt.L
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(rc.index))
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("the record context is read-only")
		return 0
	}))
	mt.RawSetString("__tostring", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LString("record context"))
		return 1
	}))
	rc.ud = L.NewUserData()
	rc.ud.Value = rc
	L.SetMetatable(rc.ud, mt)
	return rc
}

// set makes rec the current record and returns the `r` value for the call.
func (rc *recordContext) set(rec *pipeline.Record) lua.LValue {
	rc.rec = *rec
	rc.headers = nil
	return rc.ud
}

func (rc *recordContext) index(L *lua.LState) int {
	switch L.CheckString(2) {
	case "timestamp":
		L.Push(lua.LNumber(rc.rec.Timestamp))
	case "topic":
		L.Push(lua.LString(rc.rec.Topic))
	case "partition":
		L.Push(lua.LNumber(rc.rec.Partition))
	case "offset":
		L.Push(lua.LNumber(rc.rec.Offset))
	case "headers":
		if rc.headers == nil {
			rc.headers = rc.rt.headersTable(rc.rec.Headers)
		}
		L.Push(rc.headers)
	default:
		L.Push(lua.LNil)
	}
	return 1
}

// headersList is the metatable field of a headers table holding, in a userdata, the headers
// it renders: handed back unchanged (ctx:forward, a store's put), the table stands for the
// full list, repeated names and order kept.
const headersList = "__stoat_headers"

// headersTable renders headers as a name → value table (last value wins) whose :all()
// returns the full ordered list of {key=, value=} entries. A header with a null value maps to
// stoat.null.
func (rt *Runtime) headersTable(h pipeline.Headers) *lua.LTable {
	L := rt.L
	t := L.CreateTable(0, len(h))
	for _, hd := range h {
		t.RawSetString(hd.Key, rt.headerValue(hd.Value))
	}
	mt := L.NewTable()
	list := L.NewUserData()
	list.Value = h
	mt.RawSetString(headersList, list)
	methods := L.NewTable()
	methods.RawSetString("all", L.NewFunction(func(L *lua.LState) int {
		list := L.CreateTable(len(h), 0)
		for _, hd := range h {
			e := L.CreateTable(0, 2)
			e.RawSetString("key", lua.LString(hd.Key))
			e.RawSetString("value", rt.headerValue(hd.Value))
			list.Append(e)
		}
		L.Push(list)
		return 1
	}))
	mt.RawSetString("__index", methods)
	L.SetMetatable(t, mt)
	return t
}

// keptHeaders returns the headers a table of headersTable renders while the table still
// holds just what it was made with; once a script changes it, the table's own contents are
// the headers.
func (rt *Runtime) keptHeaders(t *lua.LTable) (pipeline.Headers, bool) {
	mt, ok := rt.L.GetMetatable(t).(*lua.LTable)
	if !ok {
		return nil, false
	}
	ud, ok := mt.RawGetString(headersList).(*lua.LUserData)
	if !ok {
		return nil, false
	}
	h, ok := ud.Value.(pipeline.Headers)
	if !ok {
		return nil, false
	}
	names := 0
	for i, hd := range h {
		if slices.ContainsFunc(h[i+1:], func(later pipeline.Header) bool { return later.Key == hd.Key }) {
			continue // a later value of the name is the one the table shows
		}
		names++
		if !rt.sameHeaderValue(t.RawGetString(hd.Key), hd.Value) {
			return nil, false
		}
	}
	fields := 0
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		fields++
	}
	return h, fields == names
}

func (rt *Runtime) sameHeaderValue(v lua.LValue, b []byte) bool {
	if b == nil {
		return v == rt.null
	}
	s, ok := v.(lua.LString)
	return ok && string(s) == string(b)
}

func (rt *Runtime) headerValue(v []byte) lua.LValue {
	if v == nil {
		return rt.null
	}
	return lua.LString(v)
}

package luart

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// wrapWindowStore exposes a window store partition to Lua with Kafka Streams' method names:
// put(k, v, windowStart [, ts [, headers]]); fetch(k, time) → value (timestamped: value, ts;
// headers-aware: value, ts, headers); fetch(k, from, to) iterates start, value, ts;
// fetch(kFrom, kTo, from, to), fetchAll(from, to) and all() iterate windowed key, value, ts
// (and headers for headers-aware stores); backward* reverse.
func (rt *Runtime) wrapWindowStore(s *pipeline.WindowStore) *lua.LUserData {
	return rt.wrapWith(s, "WindowStore", map[string]lua.LGFunction{
		"put":              rt.windowPut,
		"fetch":            rt.windowFetch(false),
		"backwardFetch":    rt.windowFetch(true),
		"fetchAll":         rt.windowFetchAll(false),
		"backwardFetchAll": rt.windowFetchAll(true),
		"all":              rt.windowAll(false),
		"backwardAll":      rt.windowAll(true),
		"name":             func(L *lua.LState) int { L.Push(lua.LString(rt.checkWindowStore(L).Name())); return 1 },
	})
}

// wrapWith makes a userdata holding s with the metatable of a store kind, built once per
// runtime.
func (rt *Runtime) wrapWith(s any, kind string, methods map[string]lua.LGFunction) *lua.LUserData {
	L := rt.L
	reg := L.Get(lua.RegistryIndex)
	mt, ok := L.GetField(reg, "stoat."+kind).(*lua.LTable)
	if !ok {
		mt = rt.typeMetatable(kind, methods)
		L.SetField(reg, "stoat."+kind, mt)
	}
	ud := L.NewUserData()
	ud.Value = s
	L.SetMetatable(ud, mt)
	return ud
}

func (rt *Runtime) checkWindowStore(L *lua.LState) *pipeline.WindowStore {
	if ud, ok := L.Get(1).(*lua.LUserData); ok {
		if s, ok := ud.Value.(*pipeline.WindowStore); ok {
			return s
		}
	}
	L.RaiseError("call window store methods with ':' (store:fetch(key, time))")
	return nil
}

// windowedKey renders a windowed key as DESIGN §4 says: {key = k, window = {start =, end =}}.
func (rt *Runtime) windowedKey(key any, start, end int64) *lua.LTable {
	L := rt.L
	w := L.CreateTable(0, 2)
	w.RawSetString("start", lua.LNumber(start))
	w.RawSetString("end", lua.LNumber(end))
	t := L.CreateTable(0, 2)
	t.RawSetString("key", rt.toLua(key))
	t.RawSetString("window", w)
	return t
}

// timeArg reads a timestamp argument in milliseconds.
func timeArg(L *lua.LState, i int, what string) int64 {
	return checkMillis(L, what, L.CheckNumber(i))
}

func (rt *Runtime) windowPut(L *lua.LState) int {
	s := rt.checkWindowStore(L)
	key, value := rt.arg(L, 2, "put: key"), rt.arg(L, 3, "put: value")
	start := timeArg(L, 4, "put: windowStart")
	var headers pipeline.Headers
	if s.Headers() {
		headers = rt.writeHeaders(L, 6, "put")
	}
	ok, err := s.PutWithHeaders(key, value, start, rt.writeTimestamp(L, 5), headers)
	rt.raise(L, err)
	L.Push(lua.LBool(ok))
	return 1
}

// pushWindowValue pushes a window's value, its timestamp for timestamped stores and its
// headers for headers-aware ones, and says how many values it pushed.
func (rt *Runtime) pushWindowValue(L *lua.LState, s *pipeline.WindowStore, w pipeline.Window) int {
	L.Push(rt.toLua(w.Value))
	if !s.Timestamped() {
		return 1
	}
	L.Push(lua.LNumber(w.Timestamp))
	if !s.Headers() {
		return 2
	}
	L.Push(rt.headersTable(w.Headers))
	return 3
}

func (rt *Runtime) windowFetch(backward bool) lua.LGFunction {
	return func(L *lua.LState) int {
		s := rt.checkWindowStore(L)
		switch L.GetTop() {
		case 3:
			if backward {
				L.RaiseError("backwardFetch takes (key, from, to) or (keyFrom, keyTo, from, to)")
			}
			w, found, err := s.Fetch(rt.arg(L, 2, "fetch: key"), timeArg(L, 3, "fetch: time"))
			rt.raise(L, err)
			if !found {
				L.Push(lua.LNil)
				return 1
			}
			return rt.pushWindowValue(L, s, w)
		case 4:
			it, err := s.FetchKey(rt.arg(L, 2, "fetch: key"), timeArg(L, 3, "fetch: from"), timeArg(L, 4, "fetch: to"), backward)
			rt.raise(L, err)
			return rt.pushIterator(L, it, func(L *lua.LState) int {
				w := it.Window()
				L.Push(lua.LNumber(w.Start))
				return 1 + rt.pushWindowIterValue(L, s, w)
			})
		case 5:
			it, err := s.FetchRange(rt.arg(L, 2, "fetch: keyFrom"), rt.arg(L, 3, "fetch: keyTo"),
				timeArg(L, 4, "fetch: from"), timeArg(L, 5, "fetch: to"), backward)
			rt.raise(L, err)
			return rt.pushWindowIterator(L, s, it)
		}
		L.RaiseError("fetch takes (key, time), (key, from, to) or (keyFrom, keyTo, from, to)")
		return 0
	}
}

func (rt *Runtime) windowFetchAll(backward bool) lua.LGFunction {
	return func(L *lua.LState) int {
		s := rt.checkWindowStore(L)
		it := s.FetchAll(timeArg(L, 2, "fetchAll: from"), timeArg(L, 3, "fetchAll: to"), backward)
		return rt.pushWindowIterator(L, s, it)
	}
}

func (rt *Runtime) windowAll(backward bool) lua.LGFunction {
	return func(L *lua.LState) int {
		s := rt.checkWindowStore(L)
		return rt.pushWindowIterator(L, s, s.All(backward))
	}
}

// pushWindowIterator iterates windowed key, value, timestamp (and headers).
func (rt *Runtime) pushWindowIterator(L *lua.LState, s *pipeline.WindowStore, it *pipeline.WindowIterator) int {
	return rt.pushIterator(L, it, func(L *lua.LState) int {
		w := it.Window()
		L.Push(rt.windowedKey(w.Key, w.Start, w.End))
		return 1 + rt.pushWindowIterValue(L, s, w)
	})
}

// pushWindowIterValue pushes an iterated window's value and timestamp (both kinds of
// window store keep it) and its headers for headers-aware stores.
func (rt *Runtime) pushWindowIterValue(L *lua.LState, s *pipeline.WindowStore, w pipeline.Window) int {
	L.Push(rt.toLua(w.Value))
	L.Push(lua.LNumber(w.Timestamp))
	if s.Headers() {
		L.Push(rt.headersTable(w.Headers))
		return 3
	}
	return 2
}

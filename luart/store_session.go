package luart

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// wrapSessionStore exposes a session store partition to Lua with Kafka Streams' method
// names. Sessions are windowed keys {key = k, window = {start =, end =}} (bounds inclusive):
// put(sessionKey, agg), remove(sessionKey), fetchSession(k, start, end) → agg;
// findSessions(k, earliestEnd, latestStart), findSessions(kFrom, kTo, earliestEnd,
// latestStart), fetch(k) and fetch(kFrom, kTo) iterate session key, aggregate; backward*
// reverse.
func (rt *Runtime) wrapSessionStore(s *pipeline.SessionStore) *lua.LUserData {
	return rt.wrapWith(s, "SessionStore", map[string]lua.LGFunction{
		"put":                  rt.sessionPut,
		"remove":               rt.sessionRemove,
		"fetchSession":         rt.sessionFetchSession,
		"findSessions":         rt.sessionFind(false),
		"backwardFindSessions": rt.sessionFind(true),
		"fetch":                rt.sessionFetch(false),
		"backwardFetch":        rt.sessionFetch(true),
		"name":                 func(L *lua.LState) int { L.Push(lua.LString(rt.checkSessionStore(L).Name())); return 1 },
	})
}

func (rt *Runtime) checkSessionStore(L *lua.LState) *pipeline.SessionStore {
	if ud, ok := L.Get(1).(*lua.LUserData); ok {
		if s, ok := ud.Value.(*pipeline.SessionStore); ok {
			return s
		}
	}
	L.RaiseError("call session store methods with ':' (store:fetch(key))")
	return nil
}

// sessionKeyArg reads a session key {key = k, window = {start =, end =}}.
func (rt *Runtime) sessionKeyArg(L *lua.LState, i int, what string) (key any, start, end int64) {
	t, ok := L.Get(i).(*lua.LTable)
	if !ok {
		L.RaiseError("%s: the session key must be {key = k, window = {start = ms, [\"end\"] = ms}}, not a %s", what, L.Get(i).Type())
	}
	w, ok := t.RawGetString("window").(*lua.LTable)
	if !ok {
		L.RaiseError("%s: the session key has no window = {start = ms, [\"end\"] = ms}", what)
	}
	bound := func(name string) int64 {
		n, ok := w.RawGetString(name).(lua.LNumber)
		if !ok {
			L.RaiseError("%s: the session window's %s must be a number of ms, not a %s", what, name, w.RawGetString(name).Type())
		}
		return checkMillis(L, what+": window "+name, n)
	}
	k, err := rt.fromLua(t.RawGetString("key"))
	if err != nil {
		L.RaiseError("%s: key: %v", what, err)
	}
	return k, bound("start"), bound("end")
}

func (rt *Runtime) sessionPut(L *lua.LState) int {
	s := rt.checkSessionStore(L)
	key, start, end := rt.sessionKeyArg(L, 2, "put")
	ok, err := s.Put(key, start, end, rt.arg(L, 3, "put: aggregate"), rt.rctx.rec.Timestamp)
	rt.raise(L, err)
	L.Push(lua.LBool(ok))
	return 1
}

func (rt *Runtime) sessionRemove(L *lua.LState) int {
	s := rt.checkSessionStore(L)
	key, start, end := rt.sessionKeyArg(L, 2, "remove")
	rt.raise(L, s.Remove(key, start, end, rt.rctx.rec.Timestamp))
	return 0
}

func (rt *Runtime) sessionFetchSession(L *lua.LState) int {
	s := rt.checkSessionStore(L)
	v, found, err := s.FetchSession(rt.arg(L, 2, "fetchSession: key"),
		timeArg(L, 3, "fetchSession: start"), timeArg(L, 4, "fetchSession: end"))
	rt.raise(L, err)
	if !found {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(rt.toLua(v))
	return 1
}

func (rt *Runtime) sessionFind(backward bool) lua.LGFunction {
	return func(L *lua.LState) int {
		s := rt.checkSessionStore(L)
		var it *pipeline.SessionIterator
		var err error
		switch L.GetTop() {
		case 4:
			it, err = s.FindSessions(rt.arg(L, 2, "findSessions: key"),
				timeArg(L, 3, "findSessions: earliestSessionEnd"), timeArg(L, 4, "findSessions: latestSessionStart"), backward)
		case 5:
			it, err = s.FindSessionsRange(rt.arg(L, 2, "findSessions: keyFrom"), rt.arg(L, 3, "findSessions: keyTo"),
				timeArg(L, 4, "findSessions: earliestSessionEnd"), timeArg(L, 5, "findSessions: latestSessionStart"), backward)
		default:
			L.RaiseError("findSessions takes (key, earliestSessionEnd, latestSessionStart) or (keyFrom, keyTo, earliestSessionEnd, latestSessionStart)")
		}
		rt.raise(L, err)
		return rt.pushSessionIterator(L, it)
	}
}

func (rt *Runtime) sessionFetch(backward bool) lua.LGFunction {
	return func(L *lua.LState) int {
		s := rt.checkSessionStore(L)
		var it *pipeline.SessionIterator
		var err error
		switch L.GetTop() {
		case 2:
			it, err = s.Fetch(rt.arg(L, 2, "fetch: key"), backward)
		case 3:
			it, err = s.FetchRange(rt.arg(L, 2, "fetch: keyFrom"), rt.arg(L, 3, "fetch: keyTo"), backward)
		default:
			L.RaiseError("fetch takes (key) or (keyFrom, keyTo)")
		}
		rt.raise(L, err)
		return rt.pushSessionIterator(L, it)
	}
}

// pushSessionIterator iterates session key, aggregate.
func (rt *Runtime) pushSessionIterator(L *lua.LState, it *pipeline.SessionIterator) int {
	return rt.pushIterator(L, it, func(L *lua.LState) int {
		ses := it.Session()
		L.Push(rt.windowedKey(ses.Key, ses.Start, ses.End))
		L.Push(rt.toLua(ses.Value))
		return 2
	})
}

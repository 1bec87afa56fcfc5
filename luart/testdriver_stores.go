package luart

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// The TopologyTestDriver's window, session and versioned stores: partition 0 of the store,
// read from the test's Lua state. Reads that iterate return lists of entries
// {key = {key = k, window = {start =, end =}}, value =, timestamp =, headers =} (timestamp
// and headers where the store has them), as the key-value store's all() does.

// driverStore implements a d:get...Store(name) method with open.
func (tf *testFile) driverStore(what string, open func(*testDriver, string) (lua.LValue, error)) lua.LGFunction {
	return func(L *lua.LState) int {
		store, err := open(tf.checkDriver(L), L.CheckString(2))
		if err != nil {
			L.RaiseError("%s: %v", what, err)
		}
		L.Push(store)
		return 1
	}
}

// windowStore implements getWindowStore and getTimestampedWindowStore: fetch(k, time) →
// value, timestamp; fetch(k, from, to), fetch(kFrom, kTo, from, to), fetchAll(from, to) and
// all() → lists.
func (td *testDriver) windowStore(name string) (lua.LValue, error) {
	s, err := td.d.WindowStore(name, 0)
	if err != nil {
		return nil, err
	}
	trt := td.tf.rt
	list := func(L *lua.LState, what string, it *pipeline.WindowIterator, err error) int {
		if err != nil {
			L.RaiseError("%s: %v", what, err)
		}
		return trt.pushList(L, what, it, func(e *lua.LTable) {
			w := it.Window()
			e.RawSetString("key", trt.windowedKey(w.Key, w.Start, w.End))
			e.RawSetString("value", trt.toLua(w.Value))
			e.RawSetString("timestamp", lua.LNumber(w.Timestamp))
			if s.Headers() {
				e.RawSetString("headers", trt.headersTable(w.Headers))
			}
		})
	}
	return trt.newObject(s, "WindowStore", map[string]lua.LGFunction{
		"fetch": func(L *lua.LState) int {
			key := trt.arg(L, 2, "fetch: key")
			switch L.GetTop() {
			case 3:
				w, found, err := s.Fetch(key, timeArg(L, 3, "fetch: time"))
				if err != nil {
					L.RaiseError("fetch: %v", err)
				}
				if !found {
					L.Push(lua.LNil)
					return 1
				}
				L.Push(trt.toLua(w.Value))
				L.Push(lua.LNumber(w.Timestamp))
				return 2
			case 4:
				it, err := s.FetchKey(key, timeArg(L, 3, "fetch: from"), timeArg(L, 4, "fetch: to"), false)
				return list(L, "fetch", it, err)
			case 5:
				it, err := s.FetchRange(key, trt.arg(L, 3, "fetch: keyTo"), timeArg(L, 4, "fetch: from"), timeArg(L, 5, "fetch: to"), false)
				return list(L, "fetch", it, err)
			}
			L.RaiseError("fetch takes (key, time), (key, from, to) or (keyFrom, keyTo, from, to)")
			return 0
		},
		"fetchAll": func(L *lua.LState) int {
			return list(L, "fetchAll", s.FetchAll(timeArg(L, 2, "fetchAll: from"), timeArg(L, 3, "fetchAll: to"), false), nil)
		},
		"all": func(L *lua.LState) int { return list(L, "all", s.All(false), nil) },
	}), nil
}

// sessionStore implements getSessionStore: fetchSession(k, start, end) → aggregate;
// fetch(k), fetch(kFrom, kTo) and findSessions(k, earliestEnd, latestStart) → lists.
func (td *testDriver) sessionStore(name string) (lua.LValue, error) {
	s, err := td.d.SessionStore(name, 0)
	if err != nil {
		return nil, err
	}
	trt := td.tf.rt
	list := func(L *lua.LState, what string, it *pipeline.SessionIterator, err error) int {
		if err != nil {
			L.RaiseError("%s: %v", what, err)
		}
		return trt.pushList(L, what, it, func(e *lua.LTable) {
			ses := it.Session()
			e.RawSetString("key", trt.windowedKey(ses.Key, ses.Start, ses.End))
			e.RawSetString("value", trt.toLua(ses.Value))
		})
	}
	return trt.newObject(s, "SessionStore", map[string]lua.LGFunction{
		"fetchSession": func(L *lua.LState) int {
			v, found, err := s.FetchSession(trt.arg(L, 2, "fetchSession: key"), timeArg(L, 3, "fetchSession: start"), timeArg(L, 4, "fetchSession: end"))
			if err != nil {
				L.RaiseError("fetchSession: %v", err)
			}
			if !found {
				L.Push(lua.LNil)
				return 1
			}
			L.Push(trt.toLua(v))
			return 1
		},
		"fetch": func(L *lua.LState) int {
			if L.GetTop() == 3 {
				it, err := s.FetchRange(trt.arg(L, 2, "fetch: keyFrom"), trt.arg(L, 3, "fetch: keyTo"), false)
				return list(L, "fetch", it, err)
			}
			it, err := s.Fetch(trt.arg(L, 2, "fetch: key"), false)
			return list(L, "fetch", it, err)
		},
		"findSessions": func(L *lua.LState) int {
			it, err := s.FindSessions(trt.arg(L, 2, "findSessions: key"),
				timeArg(L, 3, "findSessions: earliestSessionEnd"), timeArg(L, 4, "findSessions: latestSessionStart"), false)
			return list(L, "findSessions", it, err)
		},
	}), nil
}

// versionedStore implements getVersionedKeyValueStore: get(k [, asOf]) → value,
// timestamp, validTo (nil for the latest version), or nil.
func (td *testDriver) versionedStore(name string) (lua.LValue, error) {
	s, err := td.d.VersionedStore(name, 0)
	if err != nil {
		return nil, err
	}
	trt := td.tf.rt
	return trt.newObject(s, "VersionedKeyValueStore", map[string]lua.LGFunction{
		"get": func(L *lua.LState) int {
			key := trt.arg(L, 2, "get: key")
			var rec pipeline.VersionedRecord
			var found bool
			var err error
			if L.Get(3) == lua.LNil {
				rec, found, err = s.Get(key)
			} else {
				rec, found, err = s.GetAsOf(key, timeArg(L, 3, "get: asOfTimestamp"))
			}
			if err != nil {
				L.RaiseError("get: %v", err)
			}
			return trt.pushVersionedRecord(L, rec, found)
		},
	}), nil
}

// newObject makes a userdata holding v with its own metatable: the methods are closures
// over one store, so the metatable cannot be shared.
func (rt *Runtime) newObject(v any, kind string, methods map[string]lua.LGFunction) *lua.LUserData {
	ud := rt.L.NewUserData()
	ud.Value = v
	rt.L.SetMetatable(ud, rt.typeMetatable(kind, methods))
	return ud
}

// pushList drains it into a list of entries that fill makes, and pushes the list.
func (rt *Runtime) pushList(L *lua.LState, what string, it storeIterator, fill func(e *lua.LTable)) int {
	defer it.Close()
	out := L.NewTable()
	for it.Next() {
		e := L.NewTable()
		fill(e)
		out.Append(e)
	}
	if err := it.Err(); err != nil {
		L.RaiseError("%s: %v", what, err)
	}
	L.Push(out)
	return 1
}

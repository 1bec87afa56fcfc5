package luart

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// wrapVersionedStore exposes a versioned key-value store partition (KIP-889) to Lua:
// put(k, v [, ts]) → validTo (-1 for the latest version; nil when ts is older than the
// history retention and nothing was written); get(k [, asOf]) and delete(k [, ts]) →
// value, timestamp, validTo (nil validTo for the latest version), or nil.
func (rt *Runtime) wrapVersionedStore(s *pipeline.VersionedStore) *lua.LUserData {
	return rt.wrapWith(s, "VersionedKeyValueStore", map[string]lua.LGFunction{
		"put":    rt.versionedPut,
		"get":    rt.versionedGet,
		"delete": rt.versionedDelete,
		"name":   func(L *lua.LState) int { L.Push(lua.LString(rt.checkVersionedStore(L).Name())); return 1 },
	})
}

func (rt *Runtime) checkVersionedStore(L *lua.LState) *pipeline.VersionedStore {
	if ud, ok := L.Get(1).(*lua.LUserData); ok {
		if s, ok := ud.Value.(*pipeline.VersionedStore); ok {
			return s
		}
	}
	L.RaiseError("call versioned store methods with ':' (store:get(key))")
	return nil
}

func (rt *Runtime) versionedPut(L *lua.LState) int {
	s := rt.checkVersionedStore(L)
	validTo, err := s.Put(rt.arg(L, 2, "put: key"), rt.arg(L, 3, "put: value"), rt.writeTimestamp(L, 4))
	rt.raise(L, err)
	if validTo == pipeline.NotPut {
		L.Push(lua.LNil)
	} else {
		L.Push(lua.LNumber(validTo))
	}
	return 1
}

func (rt *Runtime) versionedGet(L *lua.LState) int {
	s := rt.checkVersionedStore(L)
	key := rt.arg(L, 2, "get: key")
	var rec pipeline.VersionedRecord
	var found bool
	var err error
	if L.Get(3) == lua.LNil {
		rec, found, err = s.Get(key)
	} else {
		rec, found, err = s.GetAsOf(key, timeArg(L, 3, "get: asOfTimestamp"))
	}
	rt.raise(L, err)
	return rt.pushVersionedRecord(L, rec, found)
}

func (rt *Runtime) versionedDelete(L *lua.LState) int {
	s := rt.checkVersionedStore(L)
	rec, found, err := s.Delete(rt.arg(L, 2, "delete: key"), rt.writeTimestamp(L, 3))
	rt.raise(L, err)
	return rt.pushVersionedRecord(L, rec, found)
}

func (rt *Runtime) pushVersionedRecord(L *lua.LState, rec pipeline.VersionedRecord, found bool) int {
	if !found {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(rt.toLua(rec.Value))
	L.Push(lua.LNumber(rec.Timestamp))
	if rec.ValidTo == pipeline.ValidToUndefined {
		L.Push(lua.LNil)
	} else {
		L.Push(lua.LNumber(rec.ValidTo))
	}
	return 3
}

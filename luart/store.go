package luart

import (
	"math"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// wrapStore exposes a key-value store partition to Lua with Kafka Streams' method names.
// get returns the value (and, for timestamped stores, the timestamp as a second result).
func (rt *Runtime) wrapStore(s *pipeline.KeyValueStore) *lua.LUserData {
	L := rt.L
	ud := L.NewUserData()
	ud.Value = s
	L.SetMetatable(ud, rt.storeMetatable())
	return ud
}

func (rt *Runtime) storeMetatable() *lua.LTable {
	L := rt.L
	if mt, ok := L.GetField(L.Get(lua.RegistryIndex), "stoat.KeyValueStore").(*lua.LTable); ok {
		return mt
	}
	mt := rt.typeMetatable("KeyValueStore", map[string]lua.LGFunction{
		"get":                   rt.storeGet,
		"put":                   rt.storePut,
		"putIfAbsent":           rt.storePutIfAbsent,
		"delete":                rt.storeDelete,
		"range":                 rt.storeRange(false),
		"reverseRange":          rt.storeRange(true),
		"all":                   rt.storeAll(false),
		"reverseAll":            rt.storeAll(true),
		"prefixScan":            rt.storePrefixScan,
		"approximateNumEntries": rt.storeCount,
		"name":                  func(L *lua.LState) int { L.Push(lua.LString(rt.checkStore(L).Name())); return 1 },
	})
	L.SetField(L.Get(lua.RegistryIndex), "stoat.KeyValueStore", mt)
	return mt
}

func (rt *Runtime) checkStore(L *lua.LState) *pipeline.KeyValueStore {
	if ud, ok := L.Get(1).(*lua.LUserData); ok {
		if s, ok := ud.Value.(*pipeline.KeyValueStore); ok {
			return s
		}
	}
	L.RaiseError("call store methods with ':' (store:get(key))")
	return nil
}

func (rt *Runtime) arg(L *lua.LState, i int, what string) any {
	v, err := rt.fromLua(L.Get(i))
	if err != nil {
		L.RaiseError("%s: %v", what, err)
	}
	return v
}

// writeTimestamp is the timestamp a store write gets: the current record's, as in Kafka
// Streams, or the one given.
func (rt *Runtime) writeTimestamp(L *lua.LState, i int) int64 {
	switch ts := L.Get(i).(type) {
	case *lua.LNilType:
		return rt.rctx.rec.Timestamp
	case lua.LNumber:
		// Kafka's producer refuses a negative timestamp, which the changelog would carry;
		// int64 of a number out of its range is math.MinInt64, and a fraction would be cut
		// off unseen.
		if f := float64(ts); f == math.Trunc(f) && f >= 0 && f < math.MaxInt64 {
			return int64(ts)
		}
	}
	L.RaiseError("timestamp (argument %d) must be milliseconds as a non-negative integer, not %s", i-1, L.Get(i).String())
	return 0
}

func (rt *Runtime) storeGet(L *lua.LState) int {
	s := rt.checkStore(L)
	v, ts, headers, found, err := s.GetWithHeaders(rt.arg(L, 2, "get: key"))
	rt.raise(L, err)
	if !found {
		L.Push(lua.LNil)
		return 1
	}
	if s.Headers() {
		L.Push(rt.toLua(v))
		L.Push(lua.LNumber(ts))
		L.Push(rt.headersTable(headers))
		return 3
	}
	L.Push(rt.toLua(v))
	if s.Timestamped() {
		L.Push(lua.LNumber(ts))
		return 2
	}
	return 1
}

// writeHeaders is the headers a write to a headers-aware store keeps: the table at i, or
// the current record's headers, as the DSL's headers-aware stores do.
func (rt *Runtime) writeHeaders(L *lua.LState, i int, what string) pipeline.Headers {
	v := L.Get(i)
	if v == lua.LNil {
		return rt.rctx.rec.Headers
	}
	h, err := rt.headersFromLua(v)
	if err != nil {
		L.RaiseError("%s: headers: %v", what, err)
	}
	return h
}

func (rt *Runtime) storePut(L *lua.LState) int {
	s := rt.checkStore(L)
	var headers pipeline.Headers
	if s.Headers() {
		headers = rt.writeHeaders(L, 5, "put")
	}
	rt.raise(L, s.PutWithHeaders(rt.arg(L, 2, "put: key"), rt.arg(L, 3, "put: value"), rt.writeTimestamp(L, 4), headers))
	return 0
}

func (rt *Runtime) storePutIfAbsent(L *lua.LState) int {
	s := rt.checkStore(L)
	key, value, ts := rt.arg(L, 2, "putIfAbsent: key"), rt.arg(L, 3, "putIfAbsent: value"), rt.writeTimestamp(L, 4)
	var headers pipeline.Headers
	if s.Headers() {
		headers = rt.writeHeaders(L, 5, "putIfAbsent")
	}
	old, _, found, err := s.Get(key)
	rt.raise(L, err)
	if !found {
		rt.raise(L, s.PutWithHeaders(key, value, ts, headers))
	}
	L.Push(rt.toLua(old))
	return 1
}

func (rt *Runtime) storeDelete(L *lua.LState) int {
	s := rt.checkStore(L)
	old, err := s.Delete(rt.arg(L, 2, "delete: key"), rt.rctx.rec.Timestamp)
	rt.raise(L, err)
	L.Push(rt.toLua(old))
	return 1
}

func (rt *Runtime) storeCount(L *lua.LState) int {
	n, err := rt.checkStore(L).ApproximateNumEntries()
	rt.raise(L, err)
	L.Push(lua.LNumber(n))
	return 1
}

func (rt *Runtime) storeRange(reverse bool) lua.LGFunction {
	return func(L *lua.LState) int {
		s := rt.checkStore(L)
		it, err := s.Range(rt.arg(L, 2, "range: from"), rt.arg(L, 3, "range: to"), reverse)
		rt.raise(L, err)
		return rt.pushKVIterator(L, it, s.Headers())
	}
}

func (rt *Runtime) storeAll(reverse bool) lua.LGFunction {
	return func(L *lua.LState) int {
		s := rt.checkStore(L)
		it, err := s.Range(nil, nil, reverse)
		rt.raise(L, err)
		return rt.pushKVIterator(L, it, s.Headers())
	}
}

func (rt *Runtime) storePrefixScan(L *lua.LState) int {
	s := rt.checkStore(L)
	it, err := s.PrefixScan(rt.arg(L, 2, "prefixScan: prefix"))
	rt.raise(L, err)
	return rt.pushKVIterator(L, it, s.Headers())
}

// storeIterator is what pushIterator walks: a store iterator of any kind.
type storeIterator interface {
	Next() bool
	Err() error
	Close()
}

// pushIterator returns a generic-for iterator: `for k, v, ts in store:range(a, b) do`;
// push pushes the current entry's values and says how many. It closes the store iterator
// at its end; one left open by a `break` is closed when the callback returns.
func (rt *Runtime) pushIterator(L *lua.LState, it storeIterator, push func(L *lua.LState) int) int {
	rt.iterators = append(rt.iterators, it)
	closed := false
	L.Push(L.NewFunction(func(L *lua.LState) int {
		if closed {
			return 0
		}
		if !it.Next() {
			closed = true
			err := it.Err()
			it.Close()
			rt.raise(L, err)
			return 0
		}
		return push(L)
	}))
	return 1
}

// pushKVIterator iterates key, value, timestamp (and headers for headers-aware stores).
func (rt *Runtime) pushKVIterator(L *lua.LState, it *pipeline.KeyValueIterator, headers bool) int {
	return rt.pushIterator(L, it, func(L *lua.LState) int {
		L.Push(rt.toLua(it.Key()))
		L.Push(rt.toLua(it.Value()))
		L.Push(lua.LNumber(it.Timestamp()))
		if headers {
			L.Push(rt.headersTable(it.Headers()))
			return 4
		}
		return 3
	})
}

// closeIterators closes the store iterators a callback opened.
func (rt *Runtime) closeIterators() {
	for _, it := range rt.iterators {
		it.Close()
	}
	rt.iterators = rt.iterators[:0]
}

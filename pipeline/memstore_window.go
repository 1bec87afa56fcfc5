package pipeline

import (
	"bytes"
	"math"
	"slices"
	"sort"
)

// WindowStore implements StoreProvider.
func (m *MemoryStores) WindowStore(spec StoreSpec, partition int32) (WindowBytesStore, error) {
	return memPart(m, spec, partition, func() *memWindows {
		return &memWindows{spec: spec, m: map[memWindowKey]memEntry{}, streamTime: math.MinInt64, hold: math.MaxInt64}
	})
}

type memWindowKey struct {
	key   string
	start int64
	seq   int32
}

// memWindows keeps windows in a map and sorts on every read: fine for tests.
type memWindows struct {
	spec       StoreSpec
	m          map[memWindowKey]memEntry
	streamTime int64 // the largest window start put
	seq        int32
	hold       int64 // HoldFrom's start
}

func (s *memWindows) cutoff() int64 { return memRetentionCutoff(s.streamTime, s.spec.Retention) }

func (s *memWindows) Put(key []byte, windowStart int64, value []byte, ts int64, headers Headers) (bool, error) {
	if value == nil && s.spec.RetainDuplicates {
		return true, nil
	}
	s.streamTime = max(s.streamTime, windowStart)
	if windowStart < min(s.cutoff(), s.hold) {
		return false, nil
	}
	k := memWindowKey{key: string(key), start: windowStart}
	if s.spec.RetainDuplicates {
		s.seq = (s.seq + 1) & math.MaxInt32
		k.seq = s.seq
	}
	if value == nil {
		delete(s.m, k)
		return true, nil
	}
	e := memEntry{value: bytes.Clone(value), ts: ts}
	if s.spec.Headers {
		e.headers = cloneHeaders(headers)
	}
	s.m[k] = e
	return true, nil
}

func (s *memWindows) Get(key []byte, windowStart int64) ([]byte, int64, Headers, bool, error) {
	if windowStart < s.cutoff() {
		return nil, 0, nil, false, nil
	}
	if s.spec.RetainDuplicates {
		it := s.Fetch(key, windowStart, windowStart, false)
		if !it.Next() {
			return nil, 0, nil, false, nil
		}
		h, _ := it.Headers()
		return it.Value(), it.Timestamp(), h, true, nil
	}
	e, ok := s.m[memWindowKey{key: string(key), start: windowStart}]
	return e.value, e.ts, e.headers, ok, nil
}

func (s *memWindows) Fetch(key []byte, from, to int64, backward bool) WindowBytesIterator {
	return s.iter(key, key, from, to, backward)
}

func (s *memWindows) FetchRange(keyFrom, keyTo []byte, from, to int64, backward bool) WindowBytesIterator {
	return s.iter(keyFrom, keyTo, from, to, backward)
}

// HoldFrom implements WindowBytesStore. The memory store never deletes a window, but
// FetchHeld shows only what a store that deletes expired windows at once would still hold.
func (s *memWindows) HoldFrom(start int64) { s.hold = start }

func (s *memWindows) FetchHeld(from, to int64) WindowBytesIterator {
	return s.rawIter(nil, nil, max(from, min(s.cutoff(), s.hold)), to, false)
}

func (s *memWindows) iter(keyFrom, keyTo []byte, from, to int64, backward bool) WindowBytesIterator {
	return s.rawIter(keyFrom, keyTo, max(from, s.cutoff()), to, backward)
}

func (s *memWindows) rawIter(keyFrom, keyTo []byte, from, to int64, backward bool) WindowBytesIterator {
	var keys []memWindowKey
	for k := range s.m {
		if inKeyRange(k.key, keyFrom, keyTo) && k.start >= from && k.start <= to {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.key != b.key {
			return a.key < b.key
		}
		if a.start != b.start {
			return a.start < b.start
		}
		return a.seq < b.seq
	})
	if backward {
		slices.Reverse(keys)
	}
	return &memWindowIter{s: s, keys: keys, memCursor: newMemCursor(len(keys))}
}

func inKeyRange(k string, from, to []byte) bool {
	return (from == nil || k >= string(from)) && (to == nil || k <= string(to))
}

type memWindowIter struct {
	memCursor
	s    *memWindows
	keys []memWindowKey
}

func (i *memWindowIter) Key() []byte      { return i.hand([]byte(i.keys[i.pos].key)) }
func (i *memWindowIter) Start() int64     { return i.keys[i.pos].start }
func (i *memWindowIter) Value() []byte    { return i.hand(i.s.m[i.keys[i.pos]].value) }
func (i *memWindowIter) Timestamp() int64 { return i.s.m[i.keys[i.pos]].ts }
func (i *memWindowIter) Headers() (Headers, error) {
	return i.handHeaders(i.s.m[i.keys[i.pos]].headers), nil
}

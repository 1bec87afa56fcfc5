package pipeline

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sort"
)

// SessionStore implements StoreProvider.
func (m *MemoryStores) SessionStore(spec StoreSpec, partition int32) (SessionBytesStore, error) {
	return memPart(m, spec, partition, func() *memSessions {
		return &memSessions{spec: spec, m: map[memSessionKey][]byte{}, streamTime: math.MinInt64, hold: math.MaxInt64}
	})
}

type memSessionKey struct {
	key        string
	start, end int64
}

// memSessions keeps sessions in a map and sorts on every read: fine for tests.
type memSessions struct {
	spec       StoreSpec
	m          map[memSessionKey][]byte
	streamTime int64 // the largest session end put
	hold       int64 // HoldFrom's end
}

func (s *memSessions) cutoff() int64 { return memRetentionCutoff(s.streamTime, s.spec.Retention) }

func (s *memSessions) Put(key []byte, start, end int64, agg []byte, _ int64) (bool, error) {
	if start > end {
		return false, fmt.Errorf("store %s: session start %d is after its end %d", s.spec.Name, start, end)
	}
	s.streamTime = max(s.streamTime, end)
	if end < min(s.cutoff(), s.hold) {
		return false, nil
	}
	k := memSessionKey{string(key), start, end}
	if agg == nil {
		delete(s.m, k)
	} else {
		s.m[k] = bytes.Clone(agg)
	}
	return true, nil
}

func (s *memSessions) FetchSession(key []byte, start, end int64) ([]byte, bool, error) {
	if end < s.cutoff() {
		return nil, false, nil
	}
	v, ok := s.m[memSessionKey{string(key), start, end}]
	return v, ok, nil
}

func (s *memSessions) FindSessions(key []byte, earliestEnd, latestStart int64, backward bool) SessionBytesIterator {
	return s.FindSessionsRange(key, key, earliestEnd, latestStart, backward)
}

// HoldFrom implements SessionBytesStore. The memory store never deletes an expired session,
// but FetchHeld shows only what a store that deletes them at once would still hold.
func (s *memSessions) HoldFrom(end int64) { s.hold = end }

func (s *memSessions) FetchHeld(from, to int64) SessionBytesIterator {
	return s.sessions(nil, nil, max(from, min(s.cutoff(), s.hold)), to, math.MaxInt64, false)
}

func (s *memSessions) FindSessionsRange(keyFrom, keyTo []byte, earliestEnd, latestStart int64, backward bool) SessionBytesIterator {
	return s.sessions(keyFrom, keyTo, max(earliestEnd, s.cutoff()), math.MaxInt64, latestStart, backward)
}

func (s *memSessions) sessions(keyFrom, keyTo []byte, earliestEnd, latestEnd, latestStart int64, backward bool) SessionBytesIterator {
	var keys []memSessionKey
	for k := range s.m {
		if inKeyRange(k.key, keyFrom, keyTo) && k.end >= earliestEnd && k.end <= latestEnd && k.start <= latestStart {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.key != b.key {
			return a.key < b.key
		}
		if a.end != b.end {
			return a.end < b.end
		}
		return a.start < b.start
	})
	if backward {
		slices.Reverse(keys)
	}
	return &memSessionIter{s: s, keys: keys, memCursor: newMemCursor(len(keys))}
}

type memSessionIter struct {
	memCursor
	s    *memSessions
	keys []memSessionKey
}

func (i *memSessionIter) Key() []byte   { return i.hand([]byte(i.keys[i.pos].key)) }
func (i *memSessionIter) Start() int64  { return i.keys[i.pos].start }
func (i *memSessionIter) End() int64    { return i.keys[i.pos].end }
func (i *memSessionIter) Value() []byte { return i.hand(i.s.m[i.keys[i.pos]]) }

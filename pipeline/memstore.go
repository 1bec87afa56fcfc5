package pipeline

import (
	"bytes"
	"sort"
)

// MemoryStores is an in-memory StoreProvider without changelogs or commits, for engine
// tests and benchmarks that must not depend on LevelDB. Running agents use package state.
type MemoryStores struct {
	parts map[storeKey]*memKV
}

// NewMemoryStores returns an empty in-memory store provider.
func NewMemoryStores() *MemoryStores { return &MemoryStores{parts: map[storeKey]*memKV{}} }

// KeyValueStore implements StoreProvider.
func (m *MemoryStores) KeyValueStore(spec StoreSpec, partition int32) (KeyValueBytesStore, error) {
	k := storeKey{spec.Name, partition}
	s, ok := m.parts[k]
	if !ok {
		s = &memKV{m: map[string]memEntry{}, timestamped: spec.Type == TimestampedKeyValueStoreType}
		m.parts[k] = s
	}
	return s, nil
}

type memEntry struct {
	value []byte
	ts    int64
}

type memKV struct {
	m           map[string]memEntry
	timestamped bool
}

func (s *memKV) Get(key []byte) ([]byte, int64, bool, error) {
	e, ok := s.m[string(key)]
	return e.value, e.ts, ok, nil
}

func (s *memKV) Put(key, value []byte, ts int64) error {
	if value == nil {
		delete(s.m, string(key))
		return nil
	}
	if !s.timestamped {
		ts = -1
	}
	s.m[string(key)] = memEntry{value: append([]byte(nil), value...), ts: ts}
	return nil
}

func (s *memKV) Range(from, to []byte, reverse bool) BytesIterator {
	return s.iter(func(k []byte) bool {
		return (from == nil || bytes.Compare(k, from) >= 0) && (to == nil || bytes.Compare(k, to) <= 0)
	}, reverse)
}

func (s *memKV) PrefixScan(prefix []byte) BytesIterator {
	return s.iter(func(k []byte) bool { return bytes.HasPrefix(k, prefix) }, false)
}

func (s *memKV) ApproximateNumEntries() (int64, error) { return int64(len(s.m)), nil }

func (s *memKV) iter(keep func([]byte) bool, reverse bool) BytesIterator {
	var keys []string
	for k := range s.m {
		if keep([]byte(k)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if reverse {
		for i, j := 0, len(keys)-1; i < j; i, j = i+1, j-1 {
			keys[i], keys[j] = keys[j], keys[i]
		}
	}
	return &memIter{s: s, keys: keys, pos: -1}
}

type memIter struct {
	s    *memKV
	keys []string
	pos  int
}

func (i *memIter) Next() bool       { i.pos++; return i.pos < len(i.keys) }
func (i *memIter) Key() []byte      { return []byte(i.keys[i.pos]) }
func (i *memIter) Value() []byte    { return i.s.m[i.keys[i.pos]].value }
func (i *memIter) Timestamp() int64 { return i.s.m[i.keys[i.pos]].ts }
func (i *memIter) Err() error       { return nil }
func (i *memIter) Close()           {}

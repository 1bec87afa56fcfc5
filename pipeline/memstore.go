package pipeline

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
)

// MemoryStores is an in-memory StoreProvider without changelogs or commits, for engine
// tests and benchmarks that must not depend on LevelDB. Running agents use package state.
// Its stores follow package state's semantics: retention, expiry and versions. Topologies
// on several goroutines may share it, each writing its own tasks' partitions (the test
// driver's workers): mu guards which partitions exist and the metadata.
type MemoryStores struct {
	mu    sync.Mutex
	parts map[storeKey]any
	meta  map[string][]byte
}

// NewMemoryStores returns an empty in-memory store provider.
func NewMemoryStores() *MemoryStores {
	return &MemoryStores{parts: map[storeKey]any{}, meta: map[string][]byte{}}
}

func metaKey(store string, partition int32, key string) string {
	return store + "\x00" + itoa(int(partition)) + "\x00" + key
}

// Meta implements StoreProvider.
func (m *MemoryStores) Meta(store string, partition int32, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.meta[metaKey(store, partition, key)], nil
}

// PutMeta implements StoreProvider.
func (m *MemoryStores) PutMeta(store string, partition int32, key string, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.meta[metaKey(store, partition, key)] = append([]byte(nil), value...)
	return nil
}

// memPart returns the partition of a store, making it on first use.
func memPart[S any](m *MemoryStores, spec StoreSpec, partition int32, make func() S) (S, error) {
	k := storeKey{spec.Name, partition}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.parts[k]; ok {
		typed, ok := s.(S)
		if !ok {
			var zero S
			return zero, fmt.Errorf("store %s partition %d is open as %T", spec.Name, partition, s)
		}
		return typed, nil
	}
	s := make()
	m.parts[k] = s
	return s, nil
}

// KeyValueStore implements StoreProvider.
func (m *MemoryStores) KeyValueStore(spec StoreSpec, partition int32) (KeyValueBytesStore, error) {
	return memPart(m, spec, partition, func() *memKV {
		return &memKV{m: map[string]memEntry{}, timestamped: spec.Type == TimestampedKeyValueStoreType, headers: spec.Headers}
	})
}

// memRetentionCutoff is the oldest window start (session end) still visible:
// streamTime - retention + 1, clamped to the int64 range.
func memRetentionCutoff(streamTime, retention int64) int64 {
	if streamTime < math.MinInt64+retention {
		return math.MinInt64
	}
	return streamTime - retention + 1
}

type memEntry struct {
	value   []byte
	ts      int64
	headers Headers
}

type memKV struct {
	m           map[string]memEntry
	timestamped bool
	headers     bool
}

func (s *memKV) Get(key []byte) ([]byte, int64, bool, error) {
	e, ok := s.m[string(key)]
	return e.value, e.ts, ok, nil
}

func (s *memKV) GetWithHeaders(key []byte) ([]byte, int64, Headers, bool, error) {
	e, ok := s.m[string(key)]
	return e.value, e.ts, e.headers, ok, nil
}

func (s *memKV) Put(key, value []byte, ts int64, headers Headers) error {
	if value == nil {
		delete(s.m, string(key))
		return nil
	}
	if !s.timestamped {
		ts = -1
	}
	e := memEntry{value: bytes.Clone(value), ts: ts}
	if s.headers {
		e.headers = cloneHeaders(headers)
	}
	s.m[string(key)] = e
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
		slices.Reverse(keys)
	}
	return &memIter{s: s, keys: keys, memCursor: newMemCursor(len(keys))}
}

type memIter struct {
	memCursor
	s    *memKV
	keys []string
}

func (i *memIter) Key() []byte      { return i.hand([]byte(i.keys[i.pos])) }
func (i *memIter) Value() []byte    { return i.hand(i.s.m[i.keys[i.pos]].value) }
func (i *memIter) Timestamp() int64 { return i.s.m[i.keys[i.pos]].ts }
func (i *memIter) Headers() (Headers, error) {
	return i.handHeaders(i.s.m[i.keys[i.pos]].headers), nil
}

// StreamTime reports the stream time of a window or session store partition, the largest
// window start (session end) put, from which its retention counts; false when nothing was
// put yet. The conformance suite reads it to tell the windows Kafka Streams' retention has
// dropped.
func (m *MemoryStores) StreamTime(store string, partition int32) (int64, bool) {
	var st int64
	m.mu.Lock()
	part := m.parts[storeKey{store, partition}]
	m.mu.Unlock()
	switch s := part.(type) {
	case *memWindows:
		st = s.streamTime
	case *memSessions:
		st = s.streamTime
	default:
		return 0, false
	}
	return st, st != math.MinInt64
}

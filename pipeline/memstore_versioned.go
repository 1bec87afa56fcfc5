package pipeline

import (
	"bytes"
	"math"
	"sort"
)

// VersionedStore implements StoreProvider.
func (m *MemoryStores) VersionedStore(spec StoreSpec, partition int32) (VersionedBytesStore, error) {
	return memPart(m, spec, partition, func() *memVersioned {
		return &memVersioned{spec: spec, m: map[string][]memVersion{}, streamTime: math.MinInt64}
	})
}

type memVersion struct {
	ts    int64
	value []byte // nil: tombstone
	// noGap marks a value that follows no gap in Kafka's history (VersionedPut).
	noGap bool
}

// memVersioned keeps each key's versions sorted by timestamp.
type memVersioned struct {
	spec       StoreSpec
	m          map[string][]memVersion
	streamTime int64 // the largest version timestamp put
}

// graceCutoff is the oldest timestamp still within the history retention.
func (s *memVersioned) graceCutoff() int64 {
	if s.streamTime < math.MinInt64+s.spec.HistoryRetention {
		return math.MinInt64
	}
	return s.streamTime - s.spec.HistoryRetention
}

func (s *memVersioned) Put(key, value []byte, ts int64) (int64, error) {
	if ts < s.graceCutoff() {
		return NotPut, nil
	}
	s.streamTime = max(s.streamTime, ts)
	vs := s.m[string(key)]
	i := sort.Search(len(vs), func(i int) bool { return vs[i].ts >= ts })
	var buf [3]VersionInfo
	from := buf[:0]
	for _, v := range vs[i:min(i+3, len(vs))] {
		from = append(from, VersionInfo{Timestamp: v.ts, Tombstone: v.value == nil, NoGap: v.noGap})
	}
	effect, _ := VersionedPut(from, ts, value == nil, func() (bool, error) { return i > 0 && vs[i-1].value != nil, nil })
	if effect.Forget {
		s.m[string(key)] = append(vs[:i], vs[i+1:]...)
		return ValidToUndefined, nil
	}
	if effect.MarkLatest {
		vs[len(vs)-1].noGap = true
	}
	v := memVersion{ts: ts, noGap: effect.NoGap}
	if value != nil {
		v.value = bytes.Clone(value)
	}
	if i < len(vs) && vs[i].ts == ts {
		vs[i] = v
	} else {
		vs = append(vs[:i], append([]memVersion{v}, vs[i:]...)...)
	}
	s.m[string(key)] = vs
	return effect.ValidTo, nil
}

func (s *memVersioned) Get(key []byte) (VersionedBytes, bool, error) {
	return s.atOrBefore(key, math.MaxInt64)
}

func (s *memVersioned) GetAsOf(key []byte, asOf int64) (VersionedBytes, bool, error) {
	rec, ok, err := s.atOrBefore(key, asOf)
	if !ok || err != nil {
		return rec, ok, err
	}
	if asOf < s.graceCutoff() && rec.ValidTo != ValidToUndefined {
		return VersionedBytes{}, false, nil
	}
	return rec, true, nil
}

func (s *memVersioned) atOrBefore(key []byte, asOf int64) (VersionedBytes, bool, error) {
	vs := s.m[string(key)]
	i := sort.Search(len(vs), func(i int) bool { return vs[i].ts > asOf }) - 1
	if i < 0 || vs[i].value == nil {
		return VersionedBytes{}, false, nil
	}
	rec := VersionedBytes{Value: vs[i].value, Timestamp: vs[i].ts, ValidTo: ValidToUndefined}
	if i+1 < len(vs) {
		rec.ValidTo = vs[i+1].ts
	}
	return rec, true, nil
}

func (s *memVersioned) Delete(key []byte, ts int64) (VersionedBytes, bool, error) {
	if ts < s.graceCutoff() {
		return VersionedBytes{}, false, nil
	}
	rec, ok, _ := s.GetAsOf(key, ts)
	_, err := s.Put(key, nil, ts)
	return rec, ok, err
}

package state

import (
	"bytes"
	"math"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Versioned store keys in LevelDB are [escaped key][version timestamp]; values are
// [kind][value] with kind 0 for a tombstone version, 1 for a value and 2 for a value marked
// NoGap (pipeline.VersionedPut). A version is valid from its timestamp until the next
// version's timestamp (exclusive).

const (
	versionTombstone = 0
	versionValue     = 1
	versionNoGap     = 2
)

func appendVersionKey(dst, key []byte, ts int64) []byte {
	return appendTime(appendEscaped(dst, key), ts)
}

func appendVersionValue(dst, value []byte, noGap bool) []byte {
	switch {
	case value == nil:
		return append(dst, versionTombstone)
	case noGap:
		return append(append(dst, versionNoGap), value...)
	}
	return append(append(dst, versionValue), value...)
}

// VersionedView reads a versioned store partition at one isolation level.
type VersionedView struct {
	p     *partition
	level IsolationLevel
}

// Level is the isolation level of this view's reads.
func (v VersionedView) Level() IsolationLevel { return v.level }

// ApproximateNumUncommittedBytes is the number of bytes buffered in this store partition
// since the last Commit or Abort.
func (v VersionedView) ApproximateNumUncommittedBytes() int64 { return v.p.uncommitted.Load() }

// graceCutoff is the oldest timestamp still within the history retention.
func (p *partition) graceCutoff(level IsolationLevel) int64 {
	st := p.streamTimeAt(level)
	if st < math.MinInt64+p.spec.HistoryRetention {
		return math.MinInt64
	}
	return st - p.spec.HistoryRetention
}

// Get returns the latest version of key; false when absent or deleted.
func (v VersionedView) Get(key []byte) (pipeline.VersionedBytes, bool, error) {
	return v.latestAtOrBefore(key, math.MaxInt64)
}

// GetAsOf returns the version of key valid at asOf: the latest one with a timestamp at or
// before asOf, unless it is a tombstone. Below the history retention only the latest
// version can still be answered (KIP-889).
func (v VersionedView) GetAsOf(key []byte, asOf int64) (pipeline.VersionedBytes, bool, error) {
	rec, ok, err := v.latestAtOrBefore(key, asOf)
	if err != nil || !ok {
		return rec, ok, err
	}
	if asOf < v.p.graceCutoff(v.level) && rec.ValidTo != pipeline.ValidToUndefined {
		return pipeline.VersionedBytes{}, false, nil
	}
	return rec, true, nil
}

// latestAtOrBefore finds the last version of key with timestamp <= asOf and its validTo.
func (v VersionedView) latestAtOrBefore(key []byte, asOf int64) (pipeline.VersionedBytes, bool, error) {
	if key == nil {
		return pipeline.VersionedBytes{}, false, v.p.errorf("get: null key")
	}
	start, limit := keyTimeBounds(key, math.MinInt64, asOf)
	it := v.p.iter(start, limit, true, v.level)
	defer it.close()
	if !it.next() {
		if it.err != nil {
			return pipeline.VersionedBytes{}, false, v.p.errorf("get %x: %w", key, it.err)
		}
		return pipeline.VersionedBytes{}, false, nil
	}
	ts := readTime(it.key[len(it.key)-tsSize:])
	if len(it.value) == 0 {
		return pipeline.VersionedBytes{}, false, v.p.errorf("version %x@%d has an empty value", key, ts)
	}
	rec := pipeline.VersionedBytes{Timestamp: ts, ValidTo: pipeline.ValidToUndefined}
	tombstone := it.value[0] == versionTombstone
	if !tombstone {
		rec.Value = bytes.Clone(it.value[1:])
	}
	validTo, err := v.p.nextVersion(key, ts, v.level)
	if err != nil {
		return pipeline.VersionedBytes{}, false, err
	}
	rec.ValidTo = validTo
	if tombstone {
		return pipeline.VersionedBytes{}, false, nil
	}
	return rec, true, nil
}

// nextVersion returns the timestamp of key's first version after ts, or pipeline.ValidToUndefined.
func (p *partition) nextVersion(key []byte, ts int64, level IsolationLevel) (int64, error) {
	if ts == math.MaxInt64 {
		return pipeline.ValidToUndefined, nil
	}
	start, limit := keyTimeBounds(key, ts+1, math.MaxInt64)
	it := p.iter(start, limit, false, level)
	defer it.close()
	if it.next() {
		return readTime(it.key[len(it.key)-tsSize:]), nil
	}
	if it.err != nil {
		return 0, p.errorf("get %x: %w", key, it.err)
	}
	return pipeline.ValidToUndefined, nil
}

// VersionedStore is a versioned key-value store partition. Its reads are READ_UNCOMMITTED.
type VersionedStore struct {
	VersionedView
	w *Writer
}

// View returns a read-only view at level.
func (s *VersionedStore) View(level IsolationLevel) VersionedView {
	return VersionedView{p: s.p, level: level}
}

// Put writes a version of key at ts (a nil value is a tombstone version) and returns its
// validTo: the next version's timestamp, pipeline.ValidToUndefined if it is the latest, or pipeline.NotPut
// when ts is older than the observed stream time minus the history retention.
func (s *VersionedStore) Put(key, value []byte, ts int64) (int64, error) {
	p := s.p
	if key == nil {
		return pipeline.NotPut, p.errorf("put: null key")
	}
	if ts < p.graceCutoff(ReadUncommitted) {
		return pipeline.NotPut, nil
	}
	if err := p.refuseChange(key, 0, value, nil); err != nil {
		return pipeline.NotPut, err
	}
	p.observe(s.w, ts)
	validTo, err := p.putVersion(key, value, ts, func(k, v []byte) { p.write(s.w, k, v) })
	if err != nil {
		return pipeline.NotPut, err
	}
	p.logChange(s.w, key, value, ts, nil)
	return validTo, nil
}

// putVersion writes a version of key at ts through write (a nil value is a tombstone) by
// Kafka Streams' put rule (pipeline.VersionedPut), and returns its validTo.
func (p *partition) putVersion(key, value []byte, ts int64, write func(k, v []byte)) (int64, error) {
	var buf [3]pipeline.VersionInfo
	from := buf[:0]
	var latest []byte // the last version read, when the rule may mark it NoGap
	start, limit := keyTimeBounds(key, ts, math.MaxInt64)
	it := p.iter(start, limit, false, ReadUncommitted)
	for len(from) < cap(from) && it.next() {
		v := pipeline.VersionInfo{Timestamp: readTime(it.key[len(it.key)-tsSize:])}
		if len(it.value) == 0 {
			it.close()
			return pipeline.NotPut, p.errorf("version %x@%d has an empty value", key, v.Timestamp)
		}
		v.Tombstone, v.NoGap = it.value[0] == versionTombstone, it.value[0] == versionNoGap
		if !v.Tombstone && !v.NoGap && len(from) < 2 {
			latest = append(latest[:0], it.value[1:]...)
		}
		from = append(from, v)
	}
	it.close()
	if it.err != nil {
		return pipeline.NotPut, p.errorf("get %x: %w", key, it.err)
	}
	effect, err := pipeline.VersionedPut(from, ts, value == nil, func() (bool, error) { return p.valueBefore(key, ts) })
	if err != nil {
		return pipeline.NotPut, err
	}
	if effect.MarkLatest {
		last := from[len(from)-1].Timestamp
		p.kbuf = appendVersionKey(p.kbuf[:0], key, last)
		write(p.kbuf, appendVersionValue(p.newValue(), latest, true))
	}
	p.kbuf = appendVersionKey(p.kbuf[:0], key, ts)
	if effect.Forget {
		write(p.kbuf, deleteEntry)
	} else {
		write(p.kbuf, appendVersionValue(p.newValue(), value, effect.NoGap))
	}
	return effect.ValidTo, nil
}

// valueBefore reports whether key's last version before ts is a value.
func (p *partition) valueBefore(key []byte, ts int64) (bool, error) {
	if ts == math.MinInt64 {
		return false, nil
	}
	start, limit := keyTimeBounds(key, math.MinInt64, ts-1)
	it := p.iter(start, limit, true, ReadUncommitted)
	defer it.close()
	if it.next() {
		return len(it.value) > 0 && it.value[0] != versionTombstone, nil
	}
	if it.err != nil {
		return false, p.errorf("get %x: %w", key, it.err)
	}
	return false, nil
}

// Delete writes a tombstone version of key at ts and returns the version it ends, as
// get(key, ts) followed by put(key, null, ts); nothing is written or returned when ts is
// older than the history retention.
func (s *VersionedStore) Delete(key []byte, ts int64) (pipeline.VersionedBytes, bool, error) {
	if key == nil {
		return pipeline.VersionedBytes{}, false, s.p.errorf("delete: null key")
	}
	if ts < s.p.graceCutoff(ReadUncommitted) {
		return pipeline.VersionedBytes{}, false, nil
	}
	rec, ok, err := s.GetAsOf(key, ts)
	if err != nil {
		return pipeline.VersionedBytes{}, false, err
	}
	if _, err := s.Put(key, nil, ts); err != nil {
		return pipeline.VersionedBytes{}, false, err
	}
	return rec, ok, nil
}

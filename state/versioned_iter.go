package state

import (
	"bytes"
	"math"

	"github.com/stoatflow/stoatflow/pipeline"
)

// VersionIterator walks the versions of one key whose validity interval [timestamp,
// validTo) overlaps [fromTime, toTime], as Kafka's MultiVersionedKeyQuery does
// (RocksDBVersionedStore.get(key, fromTime, toTime, order)). Tombstone versions are not
// returned (Kafka skips them too), but they still end the version before them. Record is
// valid until the next call to Next; Close must always be called.
type VersionIterator struct {
	p                *partition
	it               *mergeIter
	key              []byte
	fromTime, toTime int64
	descending       bool

	// pending is the ascending walk's last version, whose validTo the next one gives.
	pending        pipeline.VersionedBytes
	pendingTomb    bool
	hasPending     bool
	nextTs         int64 // descending: the timestamp of the version after the current one
	latestOnly     bool
	done           bool
	cur            pipeline.VersionedBytes
	err            error
	latestAnswered bool
}

// Versions iterates key's versions overlapping [fromTime, toTime], oldest first unless
// descending. When toTime is older than the history retention only the latest version can
// still be answered, as in Kafka.
func (v VersionedView) Versions(key []byte, fromTime, toTime int64, descending bool) *VersionIterator {
	i := &VersionIterator{p: v.p, key: key, fromTime: fromTime, toTime: toTime, descending: descending}
	if key == nil {
		i.err, i.done = v.p.errorf("versions: null key"), true
		return i
	}
	if fromTime > toTime {
		i.done = true
		return i
	}
	if toTime < v.p.graceCutoff(v.level) {
		i.latestOnly = true
		rec, ok, err := v.Get(key)
		switch {
		case err != nil:
			i.err, i.done = err, true
		case !ok || rec.Timestamp > toTime:
			i.done = true
		default:
			i.cur = rec
		}
		return i
	}
	if descending {
		next, err := v.p.nextVersion(key, toTime, v.level)
		if err != nil {
			i.err, i.done = err, true
			return i
		}
		i.nextTs = next
		start, limit := keyTimeBounds(key, math.MinInt64, toTime)
		i.it = v.p.iter(start, limit, true, v.level)
		return i
	}
	// The version valid at fromTime may start before it: begin the walk there.
	from := fromTime
	if from != math.MinInt64 {
		start, limit := keyTimeBounds(key, math.MinInt64, fromTime)
		back := v.p.iter(start, limit, true, v.level)
		if back.next() {
			from = readTime(back.key[len(back.key)-tsSize:])
		}
		back.close()
		if back.err != nil {
			i.err, i.done = v.p.errorf("versions %x: %w", key, back.err), true
			return i
		}
	}
	start, limit := keyTimeBounds(key, from, math.MaxInt64)
	i.it = v.p.iter(start, limit, false, v.level)
	return i
}

// pull reads the next stored version of the walk.
func (i *VersionIterator) pull() (ts int64, value []byte, tombstone, ok bool) {
	if !i.it.next() {
		if i.it.err != nil {
			i.err = i.p.errorf("versions %x: %w", i.key, i.it.err)
		}
		return 0, nil, false, false
	}
	ts = readTime(i.it.key[len(i.it.key)-tsSize:])
	if len(i.it.value) == 0 {
		i.err = i.p.errorf("version %x@%d has an empty value", i.key, ts)
		return 0, nil, false, false
	}
	if i.it.value[0] == versionTombstone {
		return ts, nil, true, true
	}
	return ts, bytes.Clone(i.it.value[1:]), false, true
}

// Next moves to the next version and reports whether there is one.
func (i *VersionIterator) Next() bool {
	if i.latestOnly {
		if i.done || i.latestAnswered {
			return false
		}
		i.latestAnswered = true
		return true
	}
	if i.descending {
		return i.nextDescending()
	}
	return i.nextAscending()
}

func (i *VersionIterator) nextDescending() bool {
	for !i.done {
		ts, value, tomb, ok := i.pull()
		if !ok {
			i.finish()
			return false
		}
		validTo := i.nextTs
		i.nextTs = ts
		if validTo != pipeline.ValidToUndefined && validTo <= i.fromTime {
			i.finish()
			return false
		}
		if !tomb {
			i.cur = pipeline.VersionedBytes{Value: value, Timestamp: ts, ValidTo: validTo}
			return true
		}
	}
	return false
}

// nextAscending: the walk starts at the version valid at fromTime and stops after the
// first one past toTime, so every version it completes overlaps the interval.
func (i *VersionIterator) nextAscending() bool {
	for {
		if i.done {
			if !i.hasPending {
				return false
			}
			i.hasPending = false
			if !i.pendingTomb {
				i.cur = i.pending
				return true
			}
			return false
		}
		ts, value, tomb, ok := i.pull()
		if !ok {
			if i.err != nil {
				i.hasPending = false
			}
			i.finish()
			continue
		}
		prev, prevTomb, hadPrev := i.pending, i.pendingTomb, i.hasPending
		prev.ValidTo = ts
		if ts > i.toTime {
			i.hasPending = false
			i.finish()
		} else {
			i.pending = pipeline.VersionedBytes{Value: value, Timestamp: ts, ValidTo: pipeline.ValidToUndefined}
			i.pendingTomb, i.hasPending = tomb, true
		}
		if hadPrev && !prevTomb {
			i.cur = prev
			return true
		}
	}
}

func (i *VersionIterator) finish() {
	i.done = true
	if i.it != nil {
		i.it.close()
	}
}

// Record is the current version.
func (i *VersionIterator) Record() pipeline.VersionedBytes { return i.cur }

// Err reports a read error that ended the iteration.
func (i *VersionIterator) Err() error { return i.err }

// Close releases the iterator.
func (i *VersionIterator) Close() {
	i.done = true
	if i.it != nil {
		i.it.close()
	}
}

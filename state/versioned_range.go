package state

import (
	"bytes"

	"github.com/stoatflow/stoatflow/pipeline"
)

// VersionedRangeIterator walks the latest versions of the keys in a range, skipping keys
// whose latest version is a tombstone: a RangeQuery on a versioned store. Key and Record
// are valid until the next call to Next; Close must always be called.
type VersionedRangeIterator struct {
	p       *partition
	it      *mergeIter
	reverse bool

	// group is the store-key prefix (escaped key) of the key being read; last holds its
	// newest version seen so far when ascending, where a key's versions end the group.
	group    []byte
	last     []byte
	lastTs   int64
	lastTomb bool
	hasLast  bool
	key      []byte
	cur      pipeline.VersionedBytes
	done     bool
	err      error
}

// Range iterates the latest versions of the keys in [from, to] (nil = open), in key order
// or, with reverse, descending.
func (v VersionedView) Range(from, to []byte, reverse bool) *VersionedRangeIterator {
	start, limit := keyRangeBounds(from, to)
	return &VersionedRangeIterator{p: v.p, it: v.p.iter(start, limit, reverse, v.level), reverse: reverse}
}

// entry reads the current store entry as (escaped key, timestamp, tombstone).
func (i *VersionedRangeIterator) entry() (esc []byte, ts int64, tomb bool, ok bool) {
	k := i.it.key
	if len(k) < tsSize+2 || len(i.it.value) == 0 {
		i.err = i.p.errorf("version entry %x is malformed", k)
		return nil, 0, false, false
	}
	return k[:len(k)-tsSize], readTime(k[len(k)-tsSize:]), i.it.value[0] == versionTombstone, true
}

// emit makes the version (esc, ts, value) current, unless it is a tombstone.
func (i *VersionedRangeIterator) emit(esc []byte, ts int64, tomb bool, value []byte) (bool, error) {
	if tomb {
		return false, nil
	}
	key, err := unescape(esc)
	if err != nil {
		return false, i.p.errorf("version entry: %w", err)
	}
	i.key = bytes.Clone(key)
	i.cur = pipeline.VersionedBytes{Value: bytes.Clone(value), Timestamp: ts, ValidTo: pipeline.ValidToUndefined}
	return true, nil
}

// Next moves to the next key with a live latest version and reports whether there is one.
func (i *VersionedRangeIterator) Next() bool {
	if i.reverse {
		return i.nextReverse()
	}
	return i.nextForward()
}

// nextReverse: descending, a key's newest version comes first.
func (i *VersionedRangeIterator) nextReverse() bool {
	for !i.done && i.err == nil {
		if !i.it.next() {
			return i.stop()
		}
		esc, ts, tomb, ok := i.entry()
		if !ok {
			return i.stop()
		}
		if i.group != nil && bytes.Equal(esc, i.group) {
			continue
		}
		i.group = append(i.group[:0], esc...)
		var value []byte
		if !tomb {
			value = i.it.value[1:]
		}
		emitted, err := i.emit(esc, ts, tomb, value)
		if err != nil {
			i.err = err
			return i.stop()
		}
		if emitted {
			return true
		}
	}
	return false
}

// nextForward: ascending, a key's newest version is the last of its group, known once
// the next key's first entry (or the end) is read.
func (i *VersionedRangeIterator) nextForward() bool {
	for !i.done && i.err == nil {
		more := i.it.next()
		var esc []byte
		var ts int64
		var tomb bool
		if more {
			var ok bool
			if esc, ts, tomb, ok = i.entry(); !ok {
				return i.stop()
			}
			if i.hasLast && bytes.Equal(esc, i.group) {
				i.keepLast(ts, tomb)
				continue
			}
		}
		prevGroup, prevValue, prevTs, prevTomb, hadLast := bytes.Clone(i.group), bytes.Clone(i.last), i.lastTs, i.lastTomb, i.hasLast
		if more {
			i.group = append(i.group[:0], esc...)
			i.keepLast(ts, tomb)
		} else {
			i.hasLast = false
			i.stop()
		}
		if !hadLast {
			continue
		}
		emitted, err := i.emit(prevGroup, prevTs, prevTomb, prevValue)
		if err != nil {
			i.err = err
			return i.stop()
		}
		if emitted {
			return true
		}
	}
	return false
}

func (i *VersionedRangeIterator) keepLast(ts int64, tomb bool) {
	i.lastTs, i.lastTomb, i.hasLast = ts, tomb, true
	i.last = i.last[:0]
	if !tomb {
		i.last = append(i.last, i.it.value[1:]...)
	}
}

func (i *VersionedRangeIterator) stop() bool {
	i.done = true
	i.it.close()
	if i.err == nil && i.it.err != nil {
		i.err = i.p.errorf("iterate: %w", i.it.err)
	}
	return false
}

// Key is the current key.
func (i *VersionedRangeIterator) Key() []byte { return i.key }

// Record is the current key's latest version.
func (i *VersionedRangeIterator) Record() pipeline.VersionedBytes { return i.cur }

// Err reports a read or decoding error that ended the iteration.
func (i *VersionedRangeIterator) Err() error { return i.err }

// Close releases the iterator.
func (i *VersionedRangeIterator) Close() {
	i.done = true
	i.it.close()
}

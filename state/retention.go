package state

import (
	"bytes"
	"math"

	"github.com/syndtr/goleveldb/leveldb"
)

// Expired data is invisible at once (reads filter on the observed stream time) and
// deleted at commit by a sweep of the store partition. Like Kafka Streams dropping whole
// segments, a sweep runs only after the cutoff has moved by half the retention since the
// last one, so its cost is spread over at least that much stream time.

// expiryCutoff is the time below which a window start or session end has expired, or at
// or below which a versioned store's superseded versions have.
func (p *partition) expiryCutoff(streamTime int64) int64 {
	switch p.spec.Type {
	case windowKind, sessionKind:
		return retentionCutoff(streamTime, p.spec.Retention)
	case versionedKind:
		if streamTime < math.MinInt64+p.spec.HistoryRetention {
			return math.MinInt64
		}
		return streamTime - p.spec.HistoryRetention
	}
	return math.MinInt64
}

func (p *partition) retentionPeriod() int64 {
	if p.spec.Type == versionedKind {
		return p.spec.HistoryRetention
	}
	return p.spec.Retention
}

// expired reports whether a window or session store key is older than cutoff.
func (p *partition) expired(k []byte, cutoff int64) (bool, error) {
	var tail, at int
	switch p.spec.Type {
	case windowKind:
		tail, at = windowTail, windowTail
	case sessionKind:
		tail, at = sessionTail, sessionTail
	default:
		return false, nil
	}
	if len(k) < tail+2 {
		return false, p.errorf("store key %x is too short", k)
	}
	return readTime(k[len(k)-at:]) < cutoff, nil
}

// appendSweep adds deletes of data expired as of the epoch's end when a sweep is due, and
// reports whether it ran. It walks the store partition as the batch will leave it
// (buffer over LevelDB), so its deletes come after the buffered writes in the batch.
func (p *partition) appendSweep(b *leveldb.Batch) (bool, error) {
	if p.spec.Type != windowKind && p.spec.Type != sessionKind && p.spec.Type != versionedKind {
		return false, nil
	}
	cutoff := p.expiryCutoff(p.streamTime.Load())
	if cutoff == math.MinInt64 {
		return false, nil
	}
	if p.lastSweep != math.MinInt64 && cutoff-p.lastSweep < max(p.retentionPeriod()/2, 1) {
		return false, nil
	}
	it := p.iter(nil, nil, false, ReadUncommitted)
	defer it.close()
	key := append([]byte{}, p.prefix...)
	del := func(k []byte) {
		key = append(key[:len(p.prefix)], k...)
		b.Delete(key)
	}
	var err error
	if p.spec.Type == versionedKind {
		err = p.sweepVersions(it, del, cutoff)
	} else {
		for err == nil && it.next() {
			var old bool
			if old, err = p.expired(it.key, cutoff); old {
				del(it.key)
			}
		}
	}
	if err == nil {
		err = it.err
	}
	if err != nil {
		return false, p.errorf("expire old data: %w", err)
	}
	return true, nil
}

// sweepVersions deletes versions that no longer answer any query: those superseded at or
// before cutoff, and tombstones at or before it (every version they end goes too, so
// queries from cutoff on find nothing either way).
func (p *partition) sweepVersions(it *mergeIter, del func([]byte), cutoff int64) error {
	var prev []byte // store key of the previous version
	var prevTs int64
	var prevTombstone bool
	for it.next() {
		k := it.key
		if len(k) < tsSize+2 || len(it.value) == 0 {
			return p.errorf("version entry %x is malformed", k)
		}
		ts := readTime(k[len(k)-tsSize:])
		if prev != nil {
			superseded := ts <= cutoff && bytes.Equal(prev[:len(prev)-tsSize], k[:len(k)-tsSize])
			if superseded || prevTombstone && prevTs <= cutoff {
				del(prev)
			}
		}
		prev, prevTs, prevTombstone = append(prev[:0], k...), ts, it.value[0] == versionTombstone
	}
	if prev != nil && prevTombstone && prevTs <= cutoff {
		del(prev)
	}
	return nil
}

package state

import (
	"bytes"
	"math"
	"slices"
	"sync/atomic"

	"github.com/syndtr/goleveldb/leveldb"
)

// Expired data is invisible at once (reads filter on the observed stream time) and
// deleted at commit by a sweep of the store partition. Like Kafka Streams dropping whole
// segments, a sweep runs only after the cutoff has moved by half the retention since the
// last one, so its cost is spread over at least that much stream time.
//
// The first sweep of a window or session store partition (after it opens, is restored or
// wiped) walks all of it; later ones delete the expired keys of the partition's expiry
// index, which that walk fills with the keys it keeps and every put adds to, so they read
// nothing from LevelDB and touch only what expires (Kafka Streams drops a segment without
// reading it). The indexes of one database share expiryIndexMaxBytes: an index whose
// growth takes them over it is dropped, and that partition's sweeps walk again.

// expiryCutoff is the time below which a window start or session end has expired (a held
// window or session not), or at or below which a versioned store's superseded versions have.
func (p *partition) expiryCutoff(streamTime int64) int64 {
	switch p.spec.Type {
	case windowKind, sessionKind:
		return min(retentionCutoff(streamTime, p.spec.Retention), p.hold.Load())
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

// timeTail is how far from its end a window or session store key holds its time (window
// start, session end); 0 for other stores.
func (p *partition) timeTail() int {
	switch p.spec.Type {
	case windowKind:
		return windowTail
	case sessionKind:
		return sessionTail
	}
	return 0
}

// keyTime is the time of a window or session store key.
func (p *partition) keyTime(k []byte) (int64, error) {
	tail := p.timeTail()
	if len(k) < tail+2 {
		return 0, p.errorf("store key %x is too short", k)
	}
	return readTime(k[len(k)-tail:]), nil
}

// expired reports whether a window or session store key is older than cutoff.
func (p *partition) expired(k []byte, cutoff int64) (bool, error) {
	if p.timeTail() == 0 {
		return false, nil
	}
	t, err := p.keyTime(k)
	return t < cutoff, err
}

// appendSweep adds deletes of data expired as of the epoch's end when a sweep is due, and
// reports whether it ran. Its deletes come after the buffered writes in the batch; a
// walking sweep walks the store partition as the batch will leave it (buffer over LevelDB).
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
	key := append([]byte{}, p.prefix...)
	del := func(k []byte) {
		key = append(key[:len(p.prefix)], k...)
		b.Delete(key)
	}
	if p.spec.Type != versionedKind && p.expiry != nil && p.lastSweep != math.MinInt64 {
		p.expiry.sweep(del, p.lastSweep, cutoff)
		return true, nil
	}
	it := p.iter(nil, nil, false, ReadUncommitted)
	defer it.close()
	var err error
	if p.spec.Type == versionedKind {
		err = p.sweepVersions(it, del, cutoff)
	} else {
		p.setExpiry(nil) // the walk builds the index anew
		index := newExpiryIndex(p.spec.Retention, p.timeTail(), &p.db.expiryBytes)
		for err == nil && it.next() {
			var t int64
			if t, err = p.keyTime(it.key); err != nil {
				break
			}
			if t < cutoff {
				del(it.key)
			} else if index != nil && !index.add(it.key, t) {
				index.release()
				index = nil
			}
		}
		p.setExpiry(index)
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

// indexExpiry adds a put of store key k, whose time is t, to the partition's expiry index.
// Deletes stay in it: deleting a key that is gone again costs less than keeping the index
// right across an aborted epoch.
func (p *partition) indexExpiry(k []byte, t int64) {
	if p.expiry != nil && !p.expiry.add(k, t) {
		p.setExpiry(nil)
	}
}

// setExpiry replaces the partition's expiry index, giving the old one's bytes back to the
// database's bound.
func (p *partition) setExpiry(x *expiryIndex) {
	if p.expiry != nil {
		p.expiry.release()
	}
	p.expiry = x
}

// expiryIndexMaxBytes bounds the expiry indexes of one database together (their keys' bytes
// plus expiryEntryOverhead per key), however many window and session store partitions it
// holds: a partition whose index would take them over it keeps the walking sweep. Tests
// lower it.
var expiryIndexMaxBytes int64 = 32 << 20

// expiryEntryOverhead is what an index entry costs besides its key (map slot, string
// header).
const expiryEntryOverhead = 64

// expiryIndex holds the store keys of a window or session store partition in buckets of
// width ms of their time (window start, session end), which a key ends with tail bytes
// before its end.
type expiryIndex struct {
	width   int64
	tail    int
	buckets map[int64]*expiryBucket
	bytes   int64
	total   *atomic.Int64 // the database's expiryBytes, which bytes is part of
	expired []string      // reused by sweep
	kbuf    []byte
}

type expiryBucket struct {
	keys  map[string]struct{}
	bytes int64
}

func newExpiryIndex(retention int64, tail int, total *atomic.Int64) *expiryIndex {
	return &expiryIndex{width: max(retention/4, 1), tail: tail, buckets: map[int64]*expiryBucket{}, total: total}
}

// release gives the index's bytes back to the database's bound; the index is not used again.
func (x *expiryIndex) release() {
	x.total.Add(-x.bytes)
	x.bytes = 0
}

// account adds n bytes (negative: frees them) to the index and to the database's bound.
func (x *expiryIndex) account(n int64) {
	x.bytes += n
	x.total.Add(n)
}

// bucket is floor(t / width).
func (x *expiryIndex) bucket(t int64) int64 {
	b := t / x.width
	if t%x.width < 0 {
		b--
	}
	return b
}

// add indexes store key k at time t; false when the index has grown too large to keep.
func (x *expiryIndex) add(k []byte, t int64) bool {
	id := x.bucket(t)
	b := x.buckets[id]
	if b == nil {
		b = &expiryBucket{keys: map[string]struct{}{}}
		x.buckets[id] = b
	} else if _, ok := b.keys[string(k)]; ok {
		return true
	}
	b.keys[string(k)] = struct{}{}
	n := int64(len(k)) + expiryEntryOverhead
	b.bytes += n
	x.account(n)
	return x.total.Load() <= expiryIndexMaxBytes
}

// sweep deletes the indexed keys older than cutoff, in key order as LevelDB takes a batch
// best. Those older than the last committed sweep's cutoff are gone from LevelDB already and
// leave the index; the others stay until the next sweep, in case this commit fails.
func (x *expiryIndex) sweep(del func([]byte), lastSweep, cutoff int64) {
	gone, due := x.bucket(lastSweep), x.bucket(cutoff)
	expired := x.expired[:0]
	for id, b := range x.buckets {
		switch {
		case id > due:
			continue
		case id < gone:
			x.account(-b.bytes)
			delete(x.buckets, id)
			continue
		}
		for k := range b.keys {
			t := readTime([]byte(k[len(k)-x.tail:]))
			switch {
			case t < lastSweep:
				delete(b.keys, k)
				n := int64(len(k)) + expiryEntryOverhead
				b.bytes -= n
				x.account(-n)
			case t < cutoff:
				expired = append(expired, k)
			}
		}
	}
	slices.Sort(expired)
	for i, k := range expired {
		x.kbuf = append(x.kbuf[:0], k...)
		del(x.kbuf)
		expired[i] = ""
	}
	x.expired = expired[:0]
}

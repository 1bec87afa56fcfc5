package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// IsolationLevel chooses what a read sees (KIP-892).
type IsolationLevel int

const (
	// ReadUncommitted sees the current epoch's buffered writes over committed state.
	ReadUncommitted IsolationLevel = iota
	// ReadCommitted sees committed state only.
	ReadCommitted
)

func (l IsolationLevel) String() string {
	if l == ReadCommitted {
		return "READ_COMMITTED"
	}
	return "READ_UNCOMMITTED"
}

// ParseIsolationLevel reads Kafka's names READ_UNCOMMITTED and READ_COMMITTED.
func ParseIsolationLevel(s string) (IsolationLevel, error) {
	switch s {
	case "READ_UNCOMMITTED":
		return ReadUncommitted, nil
	case "READ_COMMITTED":
		return ReadCommitted, nil
	}
	return 0, fmt.Errorf("isolation level %q is not READ_UNCOMMITTED or READ_COMMITTED", s)
}

// Buffer entries are [op][payload]: a put carries the LevelDB value, a delete hides it.
const (
	opDelete = 0
	opPut    = 1
)

var deleteEntry = []byte{opDelete}

// partition is one store partition: its LevelDB prefix and its epoch buffer.
type partition struct {
	db     *DB
	spec   catalogSpec
	id     uint32
	num    int32
	prefix []byte
	cache  *valueCache // nil unless the DB caches this store's point reads

	// buf is replaced, never reset, at Commit and Abort: readers on other goroutines may
	// still hold the old one or slices into it.
	buf atomic.Pointer[epochBuffer]
	// sealed is the previous epoch's buffer while DB.CommitInBackground writes it to
	// LevelDB (nil otherwise): READ_UNCOMMITTED reads look in it after buf.
	sealed      atomic.Pointer[epochBuffer]
	uncommitted atomic.Int64
	// Observed stream time of window, session and versioned stores: the largest window
	// start, session end or version timestamp written.
	streamTime          atomic.Int64
	committedStreamTime atomic.Int64
	// hold: a window store's windows starting at or after it, a session store's sessions
	// ending at or after it, stay stored past the retention (HoldFrom); math.MaxInt64
	// holds none.
	hold atomic.Int64

	// Owned by the goroutine that writes the partition (its task's worker), and between
	// epochs by the one that commits.
	dirty        bool
	metaChanged  bool
	seq          int32
	committedSeq int32
	meta         map[string][]byte
	sealedMeta   map[string][]byte // the metadata CommitInBackground is writing
	scratch      []byte            // buffer values under construction
	kbuf, ckbuf  []byte            // store and changelog keys under construction
	lastSweep    int64
	// expiry indexes a window or session store's keys by time once a sweep has walked the
	// partition; nil until then, or when it grew too large (retention.go).
	expiry *expiryIndex
}

func newPartition(db *DB, spec catalogSpec, id uint32, num int32) (*partition, error) {
	p := &partition{db: db, spec: spec, id: id, num: num, prefix: dataPrefix(id, num), lastSweep: math.MinInt64}
	if caches(spec) {
		p.cache = db.cache
	}
	p.buf.Store(newEpochBuffer(0, 0))
	p.hold.Store(math.MaxInt64)
	st, seq := int64(math.MinInt64), int32(0)
	v, err := db.ldb.Get(sysPartitionKey(sysPartMeta, id, num, nil))
	switch {
	case err == nil && len(v) == 12:
		st, seq = int64(binary.BigEndian.Uint64(v)), int32(binary.BigEndian.Uint32(v[8:]))
	case err == nil:
		return nil, db.corruptf("store %q partition %d: state record %x", spec.Name, num, v)
	case !errors.Is(err, leveldb.ErrNotFound):
		return nil, db.readErr(err)
	}
	p.setStreamTime(st)
	p.seq, p.committedSeq = seq, seq
	return p, nil
}

func (p *partition) setStreamTime(t int64) {
	p.streamTime.Store(t)
	p.committedStreamTime.Store(t)
}

func (p *partition) streamTimeAt(level IsolationLevel) int64 {
	if level == ReadCommitted {
		return p.committedStreamTime.Load()
	}
	return p.streamTime.Load()
}

// observe advances the observed stream time, a write of w's.
func (p *partition) observe(w *Writer, t int64) {
	if t > p.streamTime.Load() {
		p.streamTime.Store(t)
		p.metaChanged = true
		p.markDirty(w)
	}
}

// markDirty puts the partition in w's share of the epoch on its first write.
func (p *partition) markDirty(w *Writer) {
	if !p.dirty {
		p.dirty = true
		w.dirty = append(w.dirty, p)
	}
}

func (p *partition) diskKey(k []byte) []byte {
	b := make([]byte, 0, len(p.prefix)+len(k))
	return append(append(b, p.prefix...), k...)
}

// get returns the stored value of store key k. The value is shared with the buffer or the
// cache: callers must not write to it.
func (p *partition) get(k []byte, level IsolationLevel) ([]byte, bool, error) {
	if level == ReadUncommitted {
		if v, ok := p.buffered(k); ok {
			if v[0] == opDelete {
				return nil, false, nil
			}
			return v[1:], true, nil
		}
	}
	// The filter before the cache: most keys the cache lacks are absent ones (first sight
	// of a word or a window), and the filter turns them away for less than a cache lookup.
	if !p.mayHold(k) {
		// A database found damaged answers nothing more, not even from the filter.
		if err := p.db.ldb.failed(); err != nil {
			return nil, false, fmt.Errorf("state: store %q partition %d: %w", p.spec.Name, p.num, err)
		}
		return nil, false, nil
	}
	var token uint64
	if p.cache != nil {
		var v []byte
		var ok bool
		if v, ok, token = p.cachedGet(k); ok {
			return v, true, nil
		}
	}
	dk := p.diskKey(k)
	v, err := p.db.ldb.Get(dk)
	if err != nil {
		if errors.Is(err, leveldb.ErrNotFound) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("state: store %q partition %d: %w", p.spec.Name, p.num, p.db.readErr(err))
	}
	if p.cache != nil {
		p.cache.fill(dk, v, token)
	}
	return v, true, nil
}

// buffered returns the entry of store key k in the epoch buffer, or else in the sealed
// buffer of the commit writing in the background. buf is loaded first: a sealed buffer is
// stored before the buffer that replaces it, and cleared only once LevelDB holds it, so a
// read that finds neither finds LevelDB at least as new.
func (p *partition) buffered(k []byte) ([]byte, bool) {
	if v, ok := p.buf.Load().get(k); ok {
		return v, true
	}
	if s := p.sealed.Load(); s != nil {
		return s.get(k)
	}
	return nil, false
}

// cachedGet looks k up in the cache without allocating its disk key.
func (p *partition) cachedGet(k []byte) ([]byte, bool, uint64) {
	var buf [128]byte
	return p.cache.get(append(append(buf[:0], p.prefix...), k...))
}

// mayHold reports whether LevelDB may hold store key k, without allocating its disk key.
func (p *partition) mayHold(k []byte) bool {
	var buf [128]byte
	return p.db.keys.mayHold(append(append(buf[:0], p.prefix...), k...))
}

// newValue starts a buffer put entry in the partition's scratch space; write copies it.
func (p *partition) newValue() []byte {
	return append(p.scratch[:0], opPut)
}

// write buffers a put (v from newValue) or a delete (deleteEntry) of store key k, a write
// of w's.
func (p *partition) write(w *Writer, k, v []byte) {
	p.buf.Load().put(k, v)
	if v[0] == opPut {
		p.scratch = v[:0]
	}
	n := int64(len(k) + len(v))
	p.uncommitted.Add(n)
	p.db.uncommitted.Add(n)
	p.markDirty(w)
}

// iter iterates the store keys in [start, limit) (nil = unbounded) in key order.
func (p *partition) iter(start, limit []byte, reverse bool, level IsolationLevel) *mergeIter {
	it := &mergeIter{reverse: reverse, prefixLen: len(p.prefix)}
	if start != nil && limit != nil && bytes.Compare(start, limit) >= 0 {
		it.done = true
		return it
	}
	r := util.Range{Start: p.diskKey(start)}
	if limit != nil {
		r.Limit = p.diskKey(limit)
	} else {
		r.Limit = prefixEnd(p.prefix)
	}
	if level == ReadUncommitted {
		// Buffers before the snapshot, as in buffered: the snapshot is then at least as new
		// as the sealed buffer seen.
		live, sealed := p.buf.Load(), p.sealed.Load()
		mr := &util.Range{Start: start, Limit: limit}
		it.mem = live.iterator(mr)
		if sealed != nil {
			it.mem = newOverlayIter(it.mem, sealed.iterator(mr))
		}
	}
	it.disk = p.db.ldb.NewIterator(&r)
	return it
}

// resetBuffer drops the buffered writes after a commit or an abort.
func (p *partition) resetBuffer() {
	old := p.buf.Load()
	p.buf.Store(newEpochBuffer(min(old.size(), 4<<20), min(old.keys(), 1<<16)))
	n := p.uncommitted.Swap(0)
	p.db.uncommitted.Add(-n)
	p.dirty = false
	p.metaChanged = false
	p.meta = nil
}

func (p *partition) errorf(format string, args ...any) error {
	return fmt.Errorf("state: store %q partition %d: "+format, append([]any{p.spec.Name, p.num}, args...)...)
}

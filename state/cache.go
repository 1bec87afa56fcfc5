package state

import (
	"encoding/binary"
	"sync"

	"github.com/syndtr/goleveldb/leveldb"
)

// DefaultCacheBytes is the read cache size the agent uses unless configured otherwise.
const DefaultCacheBytes = 32 << 20

// cacheEntryOverhead is what an entry costs beyond its key and value bytes: its slot, its
// index entry and the allocator's rounding of two small allocations, measured on amd64
// (TestCacheMemoryAccounting keeps it honest).
const cacheEntryOverhead = 112

// valueCache keeps committed values of LevelDB data keys in memory, so point reads of hot
// keys skip a LevelDB Get (microseconds each). It only ever holds committed data: reads add
// what they found in LevelDB, Commit updates the cached keys its batch wrote, and Restore
// and Wipe drop what their batches touched. Eviction is CLOCK: a hit sets a slot's reference
// bit, the hand clears set bits and evicts the first clear one.
//
// Values handed out are shared and never written again: an update or eviction replaces a
// slot's slice instead of overwriting it, so a reader may keep what it got.
type valueCache struct {
	mu     sync.Mutex
	limit  int64
	used   int64
	index  map[string]int32 // disk key -> slot
	slots  []cacheSlot
	free   []int32
	hand   int
	stores map[uint32]bool // ids of stores whose point reads use the cache

	// gen is odd while a LevelDB write of data is in flight and grows by one at its start
	// and end. A read that missed may add what LevelDB returned only if gen was even when
	// it missed and is unchanged when it adds: otherwise the value may predate a write the
	// cache has already applied, or one it is about to.
	gen uint64
}

type cacheSlot struct {
	key  string
	val  []byte // nil for a free slot; a present empty value is non-nil
	used bool   // CLOCK's reference bit
}

func newValueCache(limit int64) *valueCache {
	return &valueCache{limit: limit, index: map[string]int32{}, stores: map[uint32]bool{}}
}

func cacheCost(key, val []byte) int64 {
	return int64(len(key) + len(val) + cacheEntryOverhead)
}

// caches reports whether a store's point reads use the cache. Window stores retaining
// duplicates read by scanning, and session and versioned stores mostly do, so caching
// their writes would only evict values that are read.
func caches(spec catalogSpec) bool {
	switch spec.Type {
	case keyValueKind, timestampedKeyValueKind:
		return true
	case windowKind:
		return !spec.RetainDuplicates
	}
	return false
}

// register records a newly opened store partition's store.
func (c *valueCache) register(id uint32, spec catalogSpec) {
	if !caches(spec) {
		return
	}
	c.mu.Lock()
	c.stores[id] = true
	c.mu.Unlock()
}

// get returns the cached value of disk key dk. On a miss it returns the token that fill
// needs.
func (c *valueCache) get(dk []byte) (val []byte, ok bool, token uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, ok := c.index[string(dk)]
	if !ok {
		return nil, false, c.gen
	}
	s := &c.slots[i]
	s.used = true
	return s.val, true, 0
}

// fill adds the value a read found in LevelDB after get missed with token; val must not
// be written afterwards.
func (c *valueCache) fill(dk, val []byte, token uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if token != c.gen || token&1 == 1 {
		return
	}
	c.set(dk, val)
}

// beginWrite must precede every LevelDB write of data keys, and endWrite follow it.
func (c *valueCache) beginWrite() {
	c.mu.Lock()
	c.gen++
	c.mu.Unlock()
}

// endWrite ends a write: when it was applied, a commit's batch is copied into the cache
// (applied = true, drop = false) and any other batch's keys are dropped from it.
func (c *valueCache) endWrite(b *leveldb.Batch, applied, drop bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if applied {
		if err := b.Replay(cacheReplay{c, drop}); err != nil {
			// A batch Batch built itself never fails to replay; if one did, some written
			// keys might keep old values, so nothing cached can be trusted.
			c.index, c.slots, c.free, c.hand, c.used = map[string]int32{}, nil, nil, 0, 0
		}
	}
}

// cacheReplay applies a written batch to the cache, under its lock.
type cacheReplay struct {
	c    *valueCache
	drop bool
}

// Put updates a cached key's value. A key not cached stays so: a read caches it. Most keys
// a commit writes are cached already when reads keep them hot, and copying in every new
// key would only evict those (with a million keys, most are written once in a while).
func (r cacheReplay) Put(k, v []byte) {
	if r.drop || !r.c.holds(k) {
		r.c.remove(k)
		return
	}
	if _, ok := r.c.index[string(k)]; ok {
		r.c.set(k, append(make([]byte, 0, len(v)), v...))
	}
}

func (r cacheReplay) Delete(k []byte) { r.c.remove(k) }

// holds reports whether k is a data key of a store the cache serves.
func (c *valueCache) holds(k []byte) bool {
	return len(k) >= prefixLen && k[0] == tagData && c.stores[binary.BigEndian.Uint32(k[1:5])]
}

// set stores val (owned by the cache from now on) under k, evicting as needed.
func (c *valueCache) set(k, val []byte) {
	if val == nil {
		val = []byte{}
	}
	cost := cacheCost(k, val)
	if cost > c.limit {
		c.remove(k)
		return
	}
	if i, ok := c.index[string(k)]; ok {
		s := &c.slots[i]
		c.used += int64(len(val) - len(s.val))
		s.val, s.used = val, true
		c.evict(int(i))
		return
	}
	c.used += cost
	c.evict(-1)
	var i int32
	if n := len(c.free); n > 0 {
		i, c.free = c.free[n-1], c.free[:n-1]
	} else {
		i = int32(len(c.slots))
		c.slots = append(c.slots, cacheSlot{})
	}
	key := string(k)
	c.slots[i] = cacheSlot{key: key, val: val}
	c.index[key] = i
}

// evict frees slots until the cache fits its limit, sparing slot keep.
func (c *valueCache) evict(keep int) {
	for c.used > c.limit {
		if c.hand >= len(c.slots) {
			c.hand = 0
		}
		i := c.hand
		c.hand++
		s := &c.slots[i]
		switch {
		case s.val == nil || i == keep:
		case s.used:
			s.used = false
		default:
			c.clearSlot(i)
		}
	}
}

func (c *valueCache) remove(k []byte) {
	if i, ok := c.index[string(k)]; ok {
		c.clearSlot(int(i))
	}
}

func (c *valueCache) clearSlot(i int) {
	s := &c.slots[i]
	c.used -= int64(len(s.key)+len(s.val)) + cacheEntryOverhead
	delete(c.index, s.key)
	*s = cacheSlot{}
	c.free = append(c.free, int32(i))
}

func (c *valueCache) size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

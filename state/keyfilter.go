package state

import (
	"fmt"
	"log/slog"
	"math/bits"
	"slices"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// keyFilter is a Bloom filter of every data key the database may hold, so that a point
// read of a key it never held (every new word, every new window) skips LevelDB's Get: a
// miss there searches the memtable's skiplist and probes a table per level, microseconds,
// where the filter reads one cache line per layer. LevelDB's own table filters leave the
// memtable search and the table lookups.
//
// writeData adds a batch's keys before LevelDB applies it, so a ready filter holds every
// key LevelDB has, on every goroutine. Deleted keys stay in it: the filter only ever errs
// towards a LevelDB read. A clean Close saves a ready filter (keyfilter_save.go) and the
// next Open loads it and invalidates it at once, before any data write: a saved filter is
// only ever read back by the Open right after the Close that wrote it, so a crash never
// leaves one behind that lacks keys. Without a saved filter Open builds one only for a
// database without tables (new, or rebuilt; its few keys, if any, are in the memtable,
// which Open reads): reading the keys of a database with tables would open every table at
// start, and goleveldb reads a table's footer only when it opens it, so damage done to a
// footer afterwards would no longer be found by the read that needs the table, and the
// database rebuilt. Such a database keeps the filter answering "maybe" to every read for
// the whole run, and its Close saves none.
//
// The filter grows by layers, each four times the capacity of the one before, so it needs
// no size up front and is never rebuilt: a lookup checks every layer and an add goes to the
// newest. A lookup of an absent key reads a cache line per layer, a cache miss each once
// the filter outgrows the processor's caches, so growing by four rather than two halves
// the layers (three up to 340 k keys, four up to 1.4 M) for at most twice the memory. Adds
// come from writeData, one batch at a time (on the processing goroutine, or on the
// goroutine of the background commit it waits for); lookups may come from any goroutine.
// Keys are hashed with xxhash, whose values do not change from run to run, so a saved
// filter stays valid.
//
// Its memory is bounded (Options.KeyFilterMaxBytes): a layer that would take it past the
// bound is never added, the filter is turned off instead, for the rest of the run, and
// answers "maybe" to every read from then on; its Close saves none. Keys beyond the bound
// cost LevelDB reads, never memory.
type keyFilter struct {
	ready  bool // set before the DB is handed out, never changed
	layers atomic.Pointer[[]*filterLayer]
	off    atomic.Bool // set once, when the filter would outgrow limit
	limit  int64       // bytes the layers may take together
	log    *slog.Logger
}

// filterLayer is a blocked Bloom filter: a key sets filterProbes bits of one 512-bit block.
type filterLayer struct {
	blocks   []uint64 // 8 words per block
	capacity int
	n        int // keys added
}

const (
	filterFirstKeys  = 1 << 14
	filterGrowth     = 4
	filterBitsPerKey = 10
	filterProbes     = 6
	filterBlockWords = 8
)

func newFilterLayer(capacity int) *filterLayer {
	return &filterLayer{blocks: make([]uint64, filterWords(capacity)), capacity: capacity}
}

// filterWords is the size of a layer of capacity keys.
func filterWords(capacity int) int {
	return capacity * filterBitsPerKey / (filterBlockWords * 64) * filterBlockWords
}

// block returns the word index of h's block in l and the bit pattern h sets there.
func (l *filterLayer) block(h uint64) (int, uint64) {
	hi, _ := bits.Mul64(h, uint64(len(l.blocks)/filterBlockWords))
	return int(hi) * filterBlockWords, h * 0x9E3779B97F4A7C15
}

// missing returns the bits of h's block that h sets and l lacks: none when l may hold h.
func (l *filterLayer) missing(h uint64) uint64 {
	base, x := l.block(h)
	b := l.blocks[base : base+filterBlockWords : base+filterBlockWords]
	var missing uint64
	for range filterProbes {
		bit := x & 511
		x >>= 9
		missing |= 1 << (bit & 63) &^ atomic.LoadUint64(&b[bit>>6])
	}
	return missing
}

func (l *filterLayer) set(h uint64) {
	base, x := l.block(h)
	b := l.blocks[base : base+filterBlockWords : base+filterBlockWords]
	for range filterProbes {
		bit := x & 511
		x >>= 9
		atomic.OrUint64(&b[bit>>6], 1<<(bit&63))
	}
}

// newKeyFilter returns the filter of the data keys of g's database in dir, which Open has
// just opened: the one the last Close saved, else one read from a database without tables,
// else one that is not ready.
func newKeyFilter(g *ldbGuard, dir string, limit int64, log *slog.Logger) (*keyFilter, error) {
	f, err := loadKeyFilter(g, dir)
	if err != nil {
		return nil, err
	}
	if f != nil {
		f.limit, f.log = limit, log
		if n := f.bytes(); n > limit {
			f.turnOff(fmt.Sprintf("the saved filter takes %d bytes", n))
		}
		return f, nil
	}
	f = &keyFilter{limit: limit, log: log}
	layers := []*filterLayer{newFilterLayer(filterFirstKeys)}
	f.layers.Store(&layers)
	if n := f.bytes(); n > limit {
		f.turnOff(fmt.Sprintf("its first layer takes %d bytes", n))
	}
	var st leveldb.DBStats
	if err := g.db.Stats(&st); err != nil {
		return nil, g.check(err)
	}
	if slices.ContainsFunc(st.LevelTablesCounts, func(n int) bool { return n > 0 }) {
		return f, nil
	}
	it := g.NewIterator(util.BytesPrefix([]byte{tagData}))
	defer it.Release()
	for it.Next() {
		f.add(it.Key())
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	f.ready = true
	return f, nil
}

// mayHold reports whether LevelDB may hold key k; false is certain.
func (f *keyFilter) mayHold(k []byte) bool {
	if !f.inUse() {
		return true
	}
	return f.holds(xxhash.Sum64(k))
}

// inUse reports whether the filter answers reads: ready and not turned off.
func (f *keyFilter) inUse() bool { return f.ready && !f.off.Load() }

// bytes is the memory of the filter's layers.
func (f *keyFilter) bytes() int64 {
	var n int64
	for _, l := range *f.layers.Load() {
		n += 8 * int64(len(l.blocks))
	}
	return n
}

// turnOff stops the filter for the rest of the run and frees its layers. A reader that
// checked off before it was set may still load the layers: it finds a single layer with
// every bit set, which says "maybe" to every key.
func (f *keyFilter) turnOff(why string) {
	f.off.Store(true)
	full := &filterLayer{blocks: make([]uint64, filterBlockWords)}
	for i := range full.blocks {
		full.blocks[i] = ^uint64(0)
	}
	f.layers.Store(&[]*filterLayer{full})
	if f.log != nil {
		f.log.Warn("state: the key filter is turned off for the rest of the run: reads of keys the database lacks go to LevelDB",
			"reason", why, "limit_bytes", f.limit)
	}
}

// holds reports whether a layer may hold h. It has no branch on the bits it reads, so a
// lookup's loads from every layer (a cache line each, a miss each once the filter outgrows
// the processor's caches) overlap instead of waiting for one another.
func (f *keyFilter) holds(h uint64) bool {
	lacking := uint64(1) // 0 once a layer lacks no bit
	for _, l := range *f.layers.Load() {
		m := l.missing(h)
		lacking &= (m | -m) >> 63
	}
	return lacking == 0
}

// add adds k.
func (f *keyFilter) add(k []byte) {
	h := xxhash.Sum64(k)
	if f.holds(h) {
		return
	}
	layers := *f.layers.Load()
	last := layers[len(layers)-1]
	if last.n >= last.capacity {
		capacity := filterGrowth * last.capacity
		if grown := f.bytes() + 8*int64(filterWords(capacity)); grown > f.limit {
			f.turnOff(fmt.Sprintf("its next layer would take it to %d bytes", grown))
			return
		}
		last = newFilterLayer(capacity)
		grown := append(layers[:len(layers):len(layers)], last)
		f.layers.Store(&grown)
	}
	last.set(h)
	last.n++
}

// addBatch adds the data keys b puts. A filter that is not ready or turned off learns
// nothing: it is never asked, so it would only grow.
func (f *keyFilter) addBatch(b *leveldb.Batch) {
	if !f.inUse() {
		return
	}
	// Replay fails only on a batch it cannot decode, and Batch builds only decodable ones.
	_ = b.Replay(filterReplay{f})
}

type filterReplay struct{ f *keyFilter }

func (r filterReplay) Put(k, _ []byte) {
	if len(k) > 0 && k[0] == tagData && !r.f.off.Load() {
		r.f.add(k)
	}
}

func (filterReplay) Delete([]byte) {}

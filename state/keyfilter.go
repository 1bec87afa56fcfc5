package state

import (
	"hash/maphash"
	"math/bits"
	"slices"
	"sync/atomic"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// keyFilter is a Bloom filter of every data key the database may hold, so that a point
// read of a key it never held (every new word, every new window) skips LevelDB's Get: a
// miss there searches the memtable's skiplist and probes a table per level, microseconds,
// where the filter reads one cache line per layer. LevelDB's own table filters leave the
// memtable search and the table lookups.
//
// At Open the filter is ready only for a database without tables (new, or rebuilt; its
// few keys, if any, are in the memtable, which Open reads). Reading the keys of a database
// with tables would open every table at start, and goleveldb reads a table's footer only
// when it opens it: damage done to a footer afterwards would no longer be found by the read
// that needs the table, and the database rebuilt. So a database opened with tables keeps
// the filter answering "maybe" to every read for the whole run. writeData adds a batch's
// keys before LevelDB applies it, so a ready filter holds every key LevelDB has, on every
// goroutine. Deleted keys stay in it: the filter only ever errs towards a LevelDB read.
//
// The filter grows by layers, each twice the capacity of the one before, so it needs no
// size up front and is never rebuilt: a lookup checks every layer (a handful for millions
// of keys) and an add goes to the newest. Adds come from writeData, one batch at a time (on
// the processing goroutine, or on the goroutine of the background commit it waits for);
// lookups may come from any goroutine.
type keyFilter struct {
	ready  bool // set before the DB is handed out, never changed
	layers atomic.Pointer[[]*filterLayer]
}

// filterLayer is a blocked Bloom filter: a key sets filterProbes bits of one 512-bit block.
type filterLayer struct {
	blocks   []uint64 // 8 words per block
	capacity int
	n        int // keys added
}

const (
	filterFirstKeys  = 1 << 14
	filterBitsPerKey = 10
	filterProbes     = 6
	filterBlockWords = 8
)

var filterSeed = maphash.MakeSeed()

func newFilterLayer(capacity int) *filterLayer {
	nblocks := capacity * filterBitsPerKey / (filterBlockWords * 64)
	return &filterLayer{blocks: make([]uint64, nblocks*filterBlockWords), capacity: capacity}
}

// probe calls fn with the word index and bit mask of each of h's bits in l.
func (l *filterLayer) probe(h uint64, fn func(word int, mask uint64) bool) bool {
	nblocks := uint64(len(l.blocks) / filterBlockWords)
	hi, _ := bits.Mul64(h, nblocks)
	base := int(hi) * filterBlockWords
	x := h * 0x9E3779B97F4A7C15
	for range filterProbes {
		bit := x & 511
		x >>= 9
		if !fn(base+int(bit>>6), 1<<(bit&63)) {
			return false
		}
	}
	return true
}

func (l *filterLayer) has(h uint64) bool {
	return l.probe(h, func(w int, m uint64) bool { return atomic.LoadUint64(&l.blocks[w])&m != 0 })
}

func (l *filterLayer) set(h uint64) {
	l.probe(h, func(w int, m uint64) bool { atomic.OrUint64(&l.blocks[w], m); return true })
}

// newKeyFilter returns the filter of the data keys of g's database, which Open has just
// opened.
func newKeyFilter(g *ldbGuard) (*keyFilter, error) {
	f := &keyFilter{}
	layers := []*filterLayer{newFilterLayer(filterFirstKeys)}
	f.layers.Store(&layers)
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
	if !f.ready {
		return true
	}
	return f.holds(maphash.Bytes(filterSeed, k))
}

func (f *keyFilter) holds(h uint64) bool {
	for _, l := range *f.layers.Load() {
		if l.has(h) {
			return true
		}
	}
	return false
}

// add adds k.
func (f *keyFilter) add(k []byte) {
	h := maphash.Bytes(filterSeed, k)
	if f.holds(h) {
		return
	}
	layers := *f.layers.Load()
	last := layers[len(layers)-1]
	if last.n >= last.capacity {
		last = newFilterLayer(2 * last.capacity)
		grown := append(layers[:len(layers):len(layers)], last)
		f.layers.Store(&grown)
	}
	last.set(h)
	last.n++
}

// addBatch adds the data keys b puts.
func (f *keyFilter) addBatch(b *leveldb.Batch) {
	// Replay fails only on a batch it cannot decode, and Batch builds only decodable ones.
	_ = b.Replay(filterReplay{f})
}

type filterReplay struct{ f *keyFilter }

func (r filterReplay) Put(k, _ []byte) {
	if len(k) > 0 && k[0] == tagData {
		r.f.add(k)
	}
}

func (filterReplay) Delete([]byte) {}

package state

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// keyFilter is a Bloom filter of every data key the database may hold, so that a point
// read of a key it never held (every new word, every new window) skips LevelDB's Get: a
// miss there searches the memtable's skiplist and probes a table per level, microseconds,
// where the filter reads one cache line per layer. LevelDB's own table filters leave the
// memtable search and the table lookups.
//
// Until a background scan has added the keys that were there at Open, the filter answers
// "maybe" to everything. writeData adds a batch's keys before LevelDB applies it, so once
// ready the filter holds every key LevelDB has, on every goroutine. Deleted keys stay in
// it: the filter only ever errs towards a LevelDB read.
//
// The filter grows by layers, each twice the capacity of the one before, so it needs no
// size up front and is never rebuilt: a lookup checks every layer (a handful for millions
// of keys) and an add goes to the newest.
type keyFilter struct {
	ready  atomic.Bool
	layers atomic.Pointer[[]*filterLayer]

	mu sync.Mutex // serialises adds: the processing goroutine's and the scan's

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// filterLayer is a blocked Bloom filter: a key sets filterProbes bits of one 512-bit block.
type filterLayer struct {
	blocks   []uint64 // 8 words per block
	capacity int
	n        int // keys added; guarded by keyFilter.mu
}

const (
	filterFirstKeys   = 1 << 14
	filterBitsPerKey  = 10
	filterProbes      = 6
	filterBlockWords  = 8
	filterScanBatches = 1024 // keys added per lock hold while scanning
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

func newKeyFilter() *keyFilter {
	f := &keyFilter{stop: make(chan struct{}), done: make(chan struct{})}
	layers := []*filterLayer{newFilterLayer(filterFirstKeys)}
	f.layers.Store(&layers)
	return f
}

// mayHold reports whether LevelDB may hold key k; false is certain.
func (f *keyFilter) mayHold(k []byte) bool {
	if !f.ready.Load() {
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

// add adds k. The caller holds mu.
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
	f.mu.Lock()
	defer f.mu.Unlock()
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

// scan adds the data keys ldb holds and then makes the filter ready, unless close stops
// it first or a read fails; a filter that is not ready sends every read to LevelDB. It
// reads past the guard: a damage found here is left for the reads that need the data to
// report, as they did before there was a filter.
func (f *keyFilter) scan(ldb *leveldb.DB) {
	defer close(f.done)
	defer func() { _ = recover() }() // goleveldb may panic on damage; the filter stays not ready
	it := ldb.NewIterator(util.BytesPrefix([]byte{tagData}), &opt.ReadOptions{DontFillCache: true})
	defer it.Release()
	for more := it.Next(); more; {
		select {
		case <-f.stop:
			return
		default:
		}
		more = f.addScanned(it)
	}
	if it.Error() == nil {
		f.ready.Store(true)
	}
}

// addScanned adds the iterator's key and up to filterScanBatches-1 more, and reports
// whether the iterator has more.
func (f *keyFilter) addScanned(it iterator.Iterator) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range filterScanBatches {
		f.add(it.Key())
		if !it.Next() {
			return false
		}
	}
	return true
}

// close stops the scan and waits for it.
func (f *keyFilter) close() {
	f.stopOnce.Do(func() { close(f.stop) })
	<-f.done
}

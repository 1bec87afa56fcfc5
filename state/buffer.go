package state

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/syndtr/goleveldb/leveldb/comparer"
	"github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/memdb"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// epochBuffer holds one store partition's writes of the current epoch, by store key. A
// write is one hash-table insert, as most stores are only point-read; Commit sorts the
// epoch's keys once. Key order for iterations is built only when the epoch's first
// iteration asks for it, and kept from then on, so a store that is scanned pays for order
// on every write and one that is not never does.
//
// Bytes are appended to data and never overwritten, so the slices get hands out stay
// valid after later writes, as readers on other goroutines expect. The processing
// goroutine writes; any goroutine may read.
type epochBuffer struct {
	mu      sync.RWMutex
	data    []byte
	entries []bufEntry // in first-write order
	// slots is an open-addressing table of entry index + 1 (0: empty), its length a power
	// of two at least twice the number of entries.
	slots []uint32
	// ordered maps every key to its big-endian entry index in key order; nil until the
	// first iteration of the epoch.
	ordered *memdb.DB
}

// bufEntry locates a key and its latest value in data.
type bufEntry struct {
	koff, voff int
	klen, vlen uint32
	hash       uint32 // the high half of the key's hash, to skip most key comparisons
}

// bufSeed seeds every buffer's hash: buffers never outlive the process.
var bufSeed = maphash.MakeSeed()

// newEpochBuffer returns an empty buffer sized for about dataBytes of keys and values and
// keys distinct keys.
func newEpochBuffer(dataBytes, keys int) *epochBuffer {
	n := 16
	for n < 2*keys {
		n <<= 1
	}
	return &epochBuffer{data: make([]byte, 0, dataBytes), slots: make([]uint32, n)}
}

func (b *epochBuffer) key(e *bufEntry) []byte { return b.data[e.koff : e.koff+int(e.klen)] }

func (b *epochBuffer) value(e *bufEntry) []byte {
	return b.data[e.voff : e.voff+int(e.vlen) : e.voff+int(e.vlen)]
}

// find returns the slot of k, or of the empty slot where k would go, and k's entry index
// (-1 when absent). The caller holds mu.
func (b *epochBuffer) find(k []byte, h uint64) (slot int, entry int) {
	mask := len(b.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := b.slots[i]
		if s == 0 {
			return i, -1
		}
		e := &b.entries[s-1]
		if e.hash == uint32(h>>32) && bytes.Equal(b.key(e), k) {
			return i, int(s - 1)
		}
	}
}

// get returns the buffered entry of k ([op][payload]); it is shared: callers must not
// write to it.
func (b *epochBuffer) get(k []byte) ([]byte, bool) {
	h := maphash.Bytes(bufSeed, k)
	b.mu.RLock()
	defer b.mu.RUnlock()
	_, i := b.find(k, h)
	if i < 0 {
		return nil, false
	}
	return b.value(&b.entries[i]), true
}

// put buffers entry v of key k, copying both.
func (b *epochBuffer) put(k, v []byte) {
	h := maphash.Bytes(bufSeed, k)
	b.mu.Lock()
	defer b.mu.Unlock()
	slot, i := b.find(k, h)
	if i >= 0 {
		e := &b.entries[i]
		e.voff, e.vlen = len(b.data), uint32(len(v))
		b.data = append(b.data, v...)
		return
	}
	e := bufEntry{koff: len(b.data), klen: uint32(len(k)), hash: uint32(h >> 32)}
	b.data = append(b.data, k...)
	e.voff, e.vlen = len(b.data), uint32(len(v))
	b.data = append(b.data, v...)
	b.entries = append(b.entries, e)
	n := uint32(len(b.entries))
	b.slots[slot] = n
	if b.ordered != nil {
		var idx [4]byte
		binary.BigEndian.PutUint32(idx[:], n-1)
		b.ordered.Put(k, idx[:])
	}
	if 2*len(b.entries) > len(b.slots) {
		b.grow()
	}
}

// grow doubles the hash table. The caller holds mu.
func (b *epochBuffer) grow() {
	b.slots = make([]uint32, 2*len(b.slots))
	mask := len(b.slots) - 1
	for i := range b.entries {
		h := maphash.Bytes(bufSeed, b.key(&b.entries[i]))
		j := int(h) & mask
		for b.slots[j] != 0 {
			j = (j + 1) & mask
		}
		b.slots[j] = uint32(i + 1)
	}
}

// size is the bytes of keys and values buffered, overwritten values included.
func (b *epochBuffer) size() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.data)
}

// keys is the number of distinct keys buffered.
func (b *epochBuffer) keys() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.entries)
}

// each calls fn with every key and its latest entry, in key order, until fn fails. Key
// order is what makes a commit cheap for LevelDB: its memtable is a skiplist, and inserts
// in order walk nodes the previous insert brought into the CPU cache (in first-write order
// the same batch costs LevelDB about twice as much).
func (b *epochBuffer) each(fn func(k, v []byte) error) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.ordered != nil {
		it := b.ordered.NewIterator(nil)
		defer it.Release()
		for it.Next() {
			if err := fn(it.Key(), b.value(&b.entries[binary.BigEndian.Uint32(it.Value())])); err != nil {
				return err
			}
		}
		return nil
	}
	order := make([]int32, len(b.entries))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int { return bytes.Compare(b.key(&b.entries[x]), b.key(&b.entries[y])) })
	for _, i := range order {
		if err := fn(b.key(&b.entries[i]), b.value(&b.entries[i])); err != nil {
			return err
		}
	}
	return nil
}

// iterator walks the keys in r in key order, with their latest entries: like a memdb
// iterator, it sees writes made while it is open.
func (b *epochBuffer) iterator(r *util.Range) iterator.Iterator {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ordered == nil {
		b.ordered = memdb.New(comparer.DefaultComparer, len(b.entries)*24)
		var idx [4]byte
		for i := range b.entries {
			binary.BigEndian.PutUint32(idx[:], uint32(i))
			b.ordered.Put(b.key(&b.entries[i]), idx[:])
		}
	}
	return bufIterator{Iterator: b.ordered.NewIterator(r), b: b}
}

// bufIterator is an iterator of the ordered index whose values are the entries' latest.
type bufIterator struct {
	iterator.Iterator
	b *epochBuffer
}

func (i bufIterator) Value() []byte {
	idx := i.Iterator.Value()
	if idx == nil {
		return nil
	}
	n := binary.BigEndian.Uint32(idx)
	i.b.mu.RLock()
	defer i.b.mu.RUnlock()
	return i.b.value(&i.b.entries[n])
}

// bufferIter is what mergeIter needs of a buffer iterator: it walks one way, First then
// Next or Last then Prev.
type bufferIter interface {
	First() bool
	Last() bool
	Next() bool
	Prev() bool
	Key() []byte
	Value() []byte
	Release()
}

// overlayIter walks two buffers' entries as one: on equal keys the top one's entry wins
// (a delete included, so that it still hides LevelDB's). It walks one way only.
type overlayIter struct {
	top, under       bufferIter
	topOK, underOK   bool
	fromTop, fromUnd bool
	reverse          bool
}

func newOverlayIter(top, under bufferIter) *overlayIter {
	return &overlayIter{top: top, under: under}
}

func (o *overlayIter) First() bool {
	o.reverse = false
	o.topOK, o.underOK = o.top.First(), o.under.First()
	return o.pick()
}

func (o *overlayIter) Last() bool {
	o.reverse = true
	o.topOK, o.underOK = o.top.Last(), o.under.Last()
	return o.pick()
}

func (o *overlayIter) Next() bool { return o.step() }
func (o *overlayIter) Prev() bool { return o.step() }

func (o *overlayIter) step() bool {
	if o.fromTop {
		o.topOK = o.advance(o.top)
	}
	if o.fromUnd {
		o.underOK = o.advance(o.under)
	}
	return o.pick()
}

func (o *overlayIter) advance(i bufferIter) bool {
	if o.reverse {
		return i.Prev()
	}
	return i.Next()
}

// pick chooses the iterator whose key comes first; both on equal keys.
func (o *overlayIter) pick() bool {
	o.fromTop, o.fromUnd = o.topOK, o.underOK
	if o.topOK && o.underOK {
		c := bytes.Compare(o.top.Key(), o.under.Key())
		if o.reverse {
			c = -c
		}
		o.fromTop, o.fromUnd = c <= 0, c >= 0
	}
	return o.topOK || o.underOK
}

func (o *overlayIter) Key() []byte {
	if o.fromTop {
		return o.top.Key()
	}
	if o.fromUnd {
		return o.under.Key()
	}
	return nil
}

func (o *overlayIter) Value() []byte {
	if o.fromTop {
		return o.top.Value()
	}
	if o.fromUnd {
		return o.under.Value()
	}
	return nil
}

func (o *overlayIter) Release() {
	o.top.Release()
	o.under.Release()
}

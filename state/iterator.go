package state

import (
	"bytes"

	"github.com/syndtr/goleveldb/leveldb/iterator"
)

// mergeIter walks the epoch buffer and LevelDB together in store-key order. On equal keys
// the buffer wins, and a buffered delete hides the LevelDB entry. Keys and values are
// valid until the next call to next or close: goleveldb's iterator reuses its buffers, so
// a slice kept longer silently turns into a later entry's bytes. Every iterator of this
// package is built on mergeIter, so the iterpoison build tag checks them all (handOut).
type mergeIter struct {
	mem       bufferIter // nil at READ_COMMITTED
	disk      iterator.Iterator
	prefixLen int
	reverse   bool

	started, done    bool
	closed           bool
	memOK, diskOK    bool
	fromMem, fromDsk bool
	key, value       []byte
	err              error
	// handed are the copies handOut gave out since the last step (iterpoison builds).
	handed [][]byte
}

// handOut returns b as the current key or value. In iterpoison builds it hands out a copy
// instead and overwrites it at the next step or at close (retire), so that a caller keeping
// a slice too long reads garbage and fails its test loudly, where a normal build would
// read another entry's bytes.
func (it *mergeIter) handOut(b []byte) []byte {
	if !poisonIterators || b == nil {
		return b
	}
	c := append([]byte{}, b...)
	it.handed = append(it.handed, c)
	return c
}

// retire overwrites what handOut gave out (iterpoison builds; a no-op otherwise).
func (it *mergeIter) retire() {
	if !poisonIterators {
		return
	}
	for _, b := range it.handed {
		for i := range b {
			b[i] = stalePattern[i%len(stalePattern)]
		}
	}
	clear(it.handed)
	it.handed = it.handed[:0]
}

// stalePattern is the pattern retired bytes read as: a string decoded from them says what
// went wrong.
const stalePattern = "<stale iterator bytes>"

func (it *mergeIter) step(i bufferIter) bool {
	if it.reverse {
		return i.Prev()
	}
	return i.Next()
}

func (it *mergeIter) first(i bufferIter) bool {
	if it.reverse {
		return i.Last()
	}
	return i.First()
}

func (it *mergeIter) next() bool {
	it.retire()
	if it.done {
		return false
	}
	if !it.started {
		it.started = true
		it.diskOK = it.first(it.disk)
		it.memOK = it.mem != nil && it.first(it.mem)
	} else {
		if it.fromMem {
			it.memOK = it.step(it.mem)
		}
		if it.fromDsk {
			it.diskOK = it.step(it.disk)
		}
	}
	for {
		it.fromMem, it.fromDsk = false, false
		switch {
		case it.memOK && it.diskOK:
			c := bytes.Compare(it.mem.Key(), it.disk.Key()[it.prefixLen:])
			if it.reverse {
				c = -c
			}
			it.fromMem, it.fromDsk = c <= 0, c >= 0
		case it.memOK:
			it.fromMem = true
		case it.diskOK:
			it.fromDsk = true
		default:
			it.finish()
			return false
		}
		if it.fromMem {
			v := it.mem.Value()
			if v[0] == opDelete {
				it.memOK = it.step(it.mem)
				if it.fromDsk {
					it.diskOK = it.step(it.disk)
				}
				continue
			}
			it.key, it.value = it.handOut(it.mem.Key()), it.handOut(v[1:])
			return true
		}
		it.key, it.value = it.handOut(it.disk.Key()[it.prefixLen:]), it.handOut(it.disk.Value())
		return true
	}
}

func (it *mergeIter) finish() {
	it.done = true
	it.key, it.value = nil, nil
	if it.disk != nil && it.err == nil {
		it.err = it.disk.Error()
	}
}

func (it *mergeIter) close() {
	it.retire()
	if it.closed {
		return
	}
	it.done, it.closed = true, true
	if it.disk != nil {
		if it.err == nil {
			it.err = it.disk.Error()
		}
		it.disk.Release()
	}
	if it.mem != nil {
		it.mem.Release()
	}
}

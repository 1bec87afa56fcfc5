package state

import (
	"bytes"

	"github.com/syndtr/goleveldb/leveldb/iterator"
)

// mergeIter walks the epoch buffer and LevelDB together in store-key order. On equal keys
// the buffer wins, and a buffered delete hides the LevelDB entry. Keys and values are
// valid until the next call to next.
type mergeIter struct {
	mem       iterator.Iterator // nil at READ_COMMITTED
	disk      iterator.Iterator
	prefixLen int
	reverse   bool

	started, done    bool
	closed           bool
	memOK, diskOK    bool
	fromMem, fromDsk bool
	key, value       []byte
	err              error
}

func (it *mergeIter) step(i iterator.Iterator) bool {
	if it.reverse {
		return i.Prev()
	}
	return i.Next()
}

func (it *mergeIter) first(i iterator.Iterator) bool {
	if it.reverse {
		return i.Last()
	}
	return i.First()
}

func (it *mergeIter) next() bool {
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
			it.key, it.value = it.mem.Key(), v[1:]
			return true
		}
		it.key, it.value = it.disk.Key()[it.prefixLen:], it.disk.Value()
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

package pipeline

import "time"

// bytesCursor is what every bytes iterator of a store has.
type bytesCursor interface {
	Next() bool
	Err() error
	Close()
}

// storeIter is what the typed store iterators share: it walks a bytes iterator, decodes
// each entry, keeps the first error and samples the store's range latency.
type storeIter[T any] struct {
	it     bytesCursor
	decode func() (T, error)
	rng    *opSampler
	opened time.Time // non-zero when its range latency is sampled
	cur    T
	err    error
}

func newStoreIter[T any](it bytesCursor, rng *opSampler, decode func() (T, error)) storeIter[T] {
	return storeIter[T]{it: it, decode: decode, rng: rng, opened: rng.start()}
}

// Next moves to the next entry; false at the end or on an error (see Err).
func (i *storeIter[T]) Next() bool {
	if i.err != nil || !i.it.Next() {
		return false
	}
	cur, err := i.decode()
	if err != nil {
		i.err = err
		return false
	}
	i.cur = cur
	return true
}

// Err is the error that ended the iteration, if any.
func (i *storeIter[T]) Err() error {
	if i.err != nil {
		return i.err
	}
	return i.it.Err()
}

// Close releases the iterator.
func (i *storeIter[T]) Close() {
	i.it.Close()
	i.rng.stop(i.opened)
	i.opened = time.Time{}
}

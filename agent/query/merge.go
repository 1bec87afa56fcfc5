package query

import (
	"bytes"

	"github.com/stoatflow/stoatflow/state"
)

// kvCursor is what the key-value range iterators of the state stores share.
type kvCursor interface {
	Next() bool
	Key() []byte
	Err() error
	Close()
}

// kvMerge walks partitions of a key-value store together in serialised-key order
// (descending when reverse), the order Kafka Streams' built-in stores iterate in. Each
// partition's iterator stays one entry ahead; head picks the next entry to emit.
//
// A long walk never holds its iterators for long: at the end of every chunk (see pacer)
// they are closed, and reopened after the pause at the entries they stood on, so no
// LevelDB version or epoch buffer stays pinned while a large range is read, and a commit
// in between is seen from then on, as a paginated read sees it.
type kvMerge[C kvCursor] struct {
	open    func(p int32, lo, hi []byte) (C, error)
	lo, hi  []byte
	reverse bool
	pace    *pacer

	its   []C
	parts []int32
	live  []bool // the iterator stands on an entry
	shut  []bool // the iterator is closed
	err   error  // ends the walk: head answers -1
}

// mergeRange opens [lo, hi] (nil = open) of the given partitions through open.
func mergeRange[C kvCursor](pace *pacer, parts []int32, lo, hi []byte, reverse bool, open func(p int32, lo, hi []byte) (C, error)) (*kvMerge[C], error) {
	m := &kvMerge[C]{open: open, lo: lo, hi: hi, reverse: reverse, pace: pace}
	for _, p := range parts {
		it, err := open(p, lo, hi)
		if err != nil {
			m.close()
			return nil, err
		}
		m.its = append(m.its, it)
		m.parts = append(m.parts, p)
		m.live = append(m.live, false)
		m.shut = append(m.shut, false)
		if m.advance(len(m.its) - 1); m.err != nil {
			m.close()
			return nil, m.err
		}
	}
	return m, nil
}

// openMerge walks the given partitions of a plain or timestamped key-value store.
func (s *queryStore) openMerge(pace *pacer, level state.IsolationLevel, parts []int32, lo, hi []byte, reverse bool) (*kvMerge[*state.KeyValueIterator], error) {
	return mergeRange(pace, parts, lo, hi, reverse, s.rangeOpener(level, reverse))
}

// openVersionedMerge walks the latest versions of the given partitions of a versioned store.
func (s *queryStore) openVersionedMerge(pace *pacer, level state.IsolationLevel, parts []int32, lo, hi []byte, reverse bool) (*kvMerge[*state.VersionedRangeIterator], error) {
	return mergeRange(pace, parts, lo, hi, reverse, s.versionedOpener(level, reverse))
}

func (s *queryStore) versionedOpener(level state.IsolationLevel, reverse bool) func(p int32, lo, hi []byte) (*state.VersionedRangeIterator, error) {
	return func(p int32, lo, hi []byte) (*state.VersionedRangeIterator, error) {
		kp, err := s.kv(p, level)
		if err != nil {
			return nil, err
		}
		return kp.versioned.Range(lo, hi, reverse), nil
	}
}

func (s *queryStore) rangeOpener(level state.IsolationLevel, reverse bool) func(p int32, lo, hi []byte) (*state.KeyValueIterator, error) {
	return func(p int32, lo, hi []byte) (*state.KeyValueIterator, error) {
		kp, err := s.kv(p, level)
		if err != nil {
			return nil, err
		}
		return kp.rng(lo, hi, reverse)
	}
}

// head is the index of the iterator holding the next entry, -1 when all are done or the
// walk failed (err). Equal keys (a key held by several partitions) come out in partition
// order.
func (m *kvMerge[C]) head() int {
	if m.err != nil {
		return -1
	}
	best := -1
	for i, ok := range m.live {
		if !ok {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		c := bytes.Compare(m.its[i].Key(), m.its[best].Key())
		if (c < 0 && !m.reverse) || (c > 0 && m.reverse) {
			best = i
		}
	}
	return best
}

// advance moves iterator i past the entry just emitted.
func (m *kvMerge[C]) advance(i int) {
	if m.live[i] = m.its[i].Next(); !m.live[i] {
		if m.err = m.its[i].Err(); m.err != nil {
			return
		}
	}
	if m.pace.tick() {
		m.reseat()
	}
}

// reseat closes every iterator, pauses (see pacer), and reopens the live ones at the entry
// they stood on (or the next one, if that entry was deleted meanwhile).
func (m *kvMerge[C]) reseat() {
	at := make([][]byte, len(m.its))
	for i, it := range m.its {
		if m.live[i] {
			at[i] = bytes.Clone(it.Key())
		}
		if !m.shut[i] {
			it.Close()
			m.shut[i] = true
		}
	}
	if m.err = m.pace.pause(); m.err != nil {
		return
	}
	for i := range m.its {
		if !m.live[i] {
			continue
		}
		lo, hi := at[i], m.hi
		if m.reverse {
			lo, hi = m.lo, at[i]
		}
		next, err := m.open(m.parts[i], lo, hi)
		if err != nil {
			m.err = err
			return
		}
		m.its[i], m.shut[i] = next, false
		if m.live[i] = next.Next(); !m.live[i] {
			if m.err = next.Err(); m.err != nil {
				return
			}
		}
	}
}

// close releases every iterator.
func (m *kvMerge[C]) close() {
	for i, it := range m.its {
		if !m.shut[i] {
			it.Close()
			m.shut[i] = true
		}
	}
}

package agent

import (
	"bytes"

	"github.com/stoatflow/stoatflow/state"
)

// kvMerge walks every partition of a key-value store together in serialised-key order
// (descending when reverse), the order Kafka Streams' built-in stores iterate in. Each
// partition's iterator stays one entry ahead; head picks the next entry to emit.
type kvMerge struct {
	its     []*state.KeyValueIterator
	parts   []int32
	live    []bool
	reverse bool
}

func (s *queryStore) openMerge(level state.IsolationLevel, lo, hi []byte, reverse bool) (*kvMerge, error) {
	m := &kvMerge{reverse: reverse}
	for p := int32(0); p < s.partitions; p++ {
		kp, err := s.kv(p, level)
		if err != nil {
			m.close()
			return nil, err
		}
		it, err := kp.rng(lo, hi, reverse)
		if err != nil {
			m.close()
			return nil, err
		}
		m.its = append(m.its, it)
		m.parts = append(m.parts, p)
		m.live = append(m.live, false)
		if err := m.advance(len(m.its) - 1); err != nil {
			m.close()
			return nil, err
		}
	}
	return m, nil
}

// head is the index of the iterator holding the next entry, -1 when all are done. Equal
// keys (a key held by several partitions) come out in partition order.
func (m *kvMerge) head() int {
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

func (m *kvMerge) advance(i int) error {
	m.live[i] = m.its[i].Next()
	if !m.live[i] {
		return m.its[i].Err()
	}
	return nil
}

func (m *kvMerge) close() {
	for _, it := range m.its {
		it.Close()
	}
}

package agent

import (
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

func (p stateStores) WindowStore(spec pipeline.StoreSpec, partition int32) (pipeline.WindowBytesStore, error) {
	ws, err := p.db.WindowStore(spec, partition)
	if err != nil {
		return nil, err
	}
	return windowStore{ws}, nil
}

type windowStore struct{ s *state.WindowStore }

func (w windowStore) Put(key []byte, windowStart int64, value []byte, ts int64, headers pipeline.Headers) (bool, error) {
	return w.s.PutWithHeaders(key, windowStart, value, ts, headers)
}

func (w windowStore) Get(key []byte, windowStart int64) ([]byte, int64, pipeline.Headers, bool, error) {
	v, ts, h, err := w.s.GetWithHeaders(key, windowStart)
	return v, ts, h, v != nil, err
}

func (w windowStore) Fetch(key []byte, from, to int64, backward bool) pipeline.WindowBytesIterator {
	return w.s.Fetch(key, from, to, backward)
}

func (w windowStore) FetchRange(keyFrom, keyTo []byte, from, to int64, backward bool) pipeline.WindowBytesIterator {
	return w.s.FetchRange(keyFrom, keyTo, from, to, backward)
}

package agent

import (
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

// stateStores backs the engine's stores with the application's LevelDB (package state).
type stateStores struct{ db *state.DB }

// NewStoreProvider adapts a state database to the engine's StoreProvider.
func NewStoreProvider(db *state.DB) pipeline.StoreProvider { return stateStores{db: db} }

func (p stateStores) KeyValueStore(spec pipeline.StoreSpec, partition int32) (pipeline.KeyValueBytesStore, error) {
	if spec.Type == pipeline.TimestampedKeyValueStoreType {
		ts, err := p.db.TimestampedKeyValueStore(spec, partition)
		if err != nil {
			return nil, err
		}
		return timestampedKV{ts}, nil
	}
	kv, err := p.db.KeyValueStore(spec, partition)
	if err != nil {
		return nil, err
	}
	return plainKV{kv}, nil
}

type plainKV struct{ kv *state.KeyValueStore }

func (s plainKV) Get(key []byte) ([]byte, int64, bool, error) {
	v, err := s.kv.Get(key)
	return v, state.NoTimestamp, v != nil, err
}

func (s plainKV) GetWithHeaders(key []byte) ([]byte, int64, pipeline.Headers, bool, error) {
	v, ts, found, err := s.Get(key)
	return v, ts, nil, found, err
}

// Put writes key; the changelog record carries ts as its timestamp.
func (s plainKV) Put(key, value []byte, ts int64, _ pipeline.Headers) error {
	return s.kv.Put(key, value, ts)
}

func (s plainKV) Range(from, to []byte, reverse bool) pipeline.BytesIterator {
	return s.kv.Range(from, to, reverse)
}

func (s plainKV) PrefixScan(prefix []byte) pipeline.BytesIterator {
	return s.kv.PrefixScan(prefix)
}

func (s plainKV) ApproximateNumEntries() (int64, error) { return s.kv.ApproximateNumEntries() }

type timestampedKV struct {
	s *state.TimestampedKeyValueStore
}

func (s timestampedKV) Get(key []byte) ([]byte, int64, bool, error) {
	v, ts, err := s.s.Get(key)
	return v, ts, v != nil, err
}

func (s timestampedKV) GetWithHeaders(key []byte) ([]byte, int64, pipeline.Headers, bool, error) {
	v, ts, h, err := s.s.GetWithHeaders(key)
	return v, ts, h, v != nil, err
}

func (s timestampedKV) Put(key, value []byte, ts int64, headers pipeline.Headers) error {
	if value == nil {
		return s.s.Delete(key, ts)
	}
	return s.s.PutWithHeaders(key, value, ts, headers)
}

func (s timestampedKV) Range(from, to []byte, reverse bool) pipeline.BytesIterator {
	return s.s.Range(from, to, reverse)
}

func (s timestampedKV) PrefixScan(prefix []byte) pipeline.BytesIterator {
	return s.s.PrefixScan(prefix)
}

func (s timestampedKV) ApproximateNumEntries() (int64, error) { return s.s.ApproximateNumEntries() }

func (p stateStores) Meta(store string, partition int32, key string) ([]byte, error) {
	return p.db.Meta(store, partition, key)
}

func (p stateStores) PutMeta(store string, partition int32, key string, value []byte) error {
	return p.db.PutMeta(store, partition, key, value)
}

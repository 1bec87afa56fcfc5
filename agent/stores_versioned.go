package agent

import (
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

func (p stateStores) VersionedStore(spec pipeline.StoreSpec, partition int32) (pipeline.VersionedBytesStore, error) {
	vs, err := p.db.VersionedStore(spec, partition)
	if err != nil {
		return nil, err
	}
	return versionedStore{vs}, nil
}

type versionedStore struct{ s *state.VersionedStore }

func (v versionedStore) Put(key, value []byte, ts int64) (int64, error) {
	return v.s.Put(key, value, ts)
}

func (v versionedStore) Get(key []byte) (pipeline.VersionedBytes, bool, error) {
	return versioned(v.s.Get(key))
}

func (v versionedStore) GetAsOf(key []byte, asOf int64) (pipeline.VersionedBytes, bool, error) {
	return versioned(v.s.GetAsOf(key, asOf))
}

func (v versionedStore) Delete(key []byte, ts int64) (pipeline.VersionedBytes, bool, error) {
	return versioned(v.s.Delete(key, ts))
}

func versioned(r state.VersionedRecord, found bool, err error) (pipeline.VersionedBytes, bool, error) {
	return pipeline.VersionedBytes{Value: r.Value, Timestamp: r.Timestamp, ValidTo: r.ValidTo}, found, err
}

package agent

import (
	"github.com/stoatflow/stoatflow/pipeline"
)

func (p stateStores) VersionedStore(spec pipeline.StoreSpec, partition int32) (pipeline.VersionedBytesStore, error) {
	vs, err := p.db.VersionedStore(spec, partition)
	if err != nil {
		return nil, err
	}
	return vs, nil
}

package pipeline

import "encoding/binary"

// Helpers of the processors that emit final results when the global watermark closes their
// windows (windowed aggregations with emit on close).

// forEachTask runs fn for every task partition, not only those that saw a record since
// start: windows restored from the changelog close too.
func (t *Topology) forEachTask(fn func(partition int32) error) error {
	for partition := range max(t.maxSourcePartitions, 1) {
		if err := fn(partition); err != nil {
			return err
		}
	}
	return nil
}

// emittedPosition reads the position an emitter saved with its store partition, -1 when
// none, so that a restart or a replayed epoch never emits a final result twice.
func (t *Topology) emittedPosition(store string, partition int32, key string) (int64, error) {
	raw, err := t.storeProvider.Meta(store, partition, key)
	if err != nil || len(raw) != 8 {
		return -1, err
	}
	return int64(binary.BigEndian.Uint64(raw)), nil
}

// saveEmittedPosition keeps the position with the store partition; it commits with the epoch.
func (t *Topology) saveEmittedPosition(store string, partition int32, key string, pos int64) error {
	return t.storeProvider.PutMeta(store, partition, key, binary.BigEndian.AppendUint64(nil, uint64(pos)))
}

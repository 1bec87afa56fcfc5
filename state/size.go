package state

import (
	"encoding/binary"
	"fmt"

	"github.com/syndtr/goleveldb/leveldb/util"
)

// ApproximateSize is about how many bytes a store's committed data takes in LevelDB's
// table files (LevelDB's GetApproximateSizes): what is still in the memtable is not
// counted. It reads table indexes only, so it is cheap enough for a status page.
func (db *DB) ApproximateSize(store string) (int64, error) {
	id, ok := db.storeID(store)
	if !ok {
		return 0, nil
	}
	start := binary.BigEndian.AppendUint32([]byte{tagData}, id)
	limit := binary.BigEndian.AppendUint32([]byte{tagData}, id+1)
	size, err := db.ldb.sizeOf(util.Range{Start: start, Limit: limit})
	if err != nil {
		return 0, fmt.Errorf("state: size of store %q: %w", store, err)
	}
	return size, nil
}

package pipeline

import "math"

const (
	// ValidToUndefined is a versioned put's answer, and a record's ValidTo, for the latest
	// version (Kafka Streams' PUT_RETURN_CODE_VALID_TO_UNDEFINED).
	ValidToUndefined int64 = -1
	// NotPut is a versioned put's answer for a write older than the history retention
	// (PUT_RETURN_CODE_NOT_PUT).
	NotPut int64 = math.MinInt64
)

// VersionedBytes is one version of a key, in bytes.
type VersionedBytes struct {
	Value     []byte
	Timestamp int64
	ValidTo   int64 // the next version's timestamp (exclusive), or ValidToUndefined
}

// VersionedBytesStore is one partition of a versioned key-value store (KIP-889), in bytes.
type VersionedBytesStore interface {
	// Put writes a version of key at ts (a nil value is a tombstone) and returns its
	// validTo, ValidToUndefined or NotPut.
	Put(key, value []byte, ts int64) (int64, error)
	// Get returns the latest version of key unless it is a tombstone.
	Get(key []byte) (VersionedBytes, bool, error)
	// GetAsOf returns the version of key valid at asOf.
	GetAsOf(key []byte, asOf int64) (VersionedBytes, bool, error)
	// Delete writes a tombstone at ts and returns the version it ends.
	Delete(key []byte, ts int64) (VersionedBytes, bool, error)
}

// VersionedRecord is one version of a key (Kafka Streams' VersionedRecord).
type VersionedRecord struct {
	Value     any
	Timestamp int64
	ValidTo   int64 // the next version's timestamp (exclusive), or ValidToUndefined
}

// VersionedStore is one partition of a versioned key-value store with its serdes.
type VersionedStore struct {
	storeCodec
	bytes VersionedBytesStore
}

// HistoryRetention is how far behind the observed stream time get(key, asOf) answers, ms.
func (s *VersionedStore) HistoryRetention() int64 { return s.spec.HistoryRetention }

// Put writes value as the version of key from ts on (a nil value is a tombstone) and returns
// its validTo: the next version's timestamp, ValidToUndefined when it is the latest, or
// NotPut when ts is older than the history retention.
func (s *VersionedStore) Put(key, value any, ts int64) (int64, error) {
	defer s.ops.put.stop(s.ops.put.start())
	kb, err := s.key(key)
	if err != nil {
		return NotPut, err
	}
	vb, err := s.valueBytes(value)
	if err != nil {
		return NotPut, err
	}
	return s.bytes.Put(kb, vb, ts)
}

// Get returns the latest version of key; false when absent or deleted.
func (s *VersionedStore) Get(key any) (VersionedRecord, bool, error) {
	defer s.ops.get.stop(s.ops.get.start())
	kb, err := s.key(key)
	if err != nil {
		return VersionedRecord{}, false, err
	}
	return s.record(s.bytes.Get(kb))
}

// GetAsOf returns the version of key valid at asOf; false when there is none, it is a
// tombstone, or asOf is older than the history retention and the version is not the latest.
func (s *VersionedStore) GetAsOf(key any, asOf int64) (VersionedRecord, bool, error) {
	defer s.ops.get.stop(s.ops.get.start())
	kb, err := s.key(key)
	if err != nil {
		return VersionedRecord{}, false, err
	}
	return s.record(s.bytes.GetAsOf(kb, asOf))
}

// Delete writes a tombstone version of key at ts and returns the version valid at ts, as
// get(key, ts) followed by put(key, null, ts).
func (s *VersionedStore) Delete(key any, ts int64) (VersionedRecord, bool, error) {
	defer s.ops.put.stop(s.ops.put.start())
	kb, err := s.key(key)
	if err != nil {
		return VersionedRecord{}, false, err
	}
	return s.record(s.bytes.Delete(kb, ts))
}

func (s *VersionedStore) record(b VersionedBytes, found bool, err error) (VersionedRecord, bool, error) {
	if err != nil || !found {
		return VersionedRecord{}, false, err
	}
	v, err := s.value(b.Value)
	if err != nil {
		return VersionedRecord{}, false, err
	}
	return VersionedRecord{Value: v, Timestamp: b.Timestamp, ValidTo: b.ValidTo}, true, nil
}

// VersionedStore returns one partition of a declared versioned store, for queries and tests.
func (t *Topology) VersionedStore(name string, partition int32) (*VersionedStore, error) {
	return t.versionedStore(name, partition, nil)
}

func (t *Topology) versionedStore(name string, partition int32, from *Task) (*VersionedStore, error) {
	m, err := t.storeHandles(name, partition, from)
	if err != nil {
		return nil, err
	}
	return openStore(t, m, name, partition, "versioned key-value", func(spec *StoreSpec, topic string) (*VersionedStore, error) {
		if spec.Type != VersionedKeyValueStoreType {
			return nil, errWrongStoreType(spec, "versioned key-value")
		}
		b, err := t.storeProvider.VersionedStore(*spec, partition)
		if err != nil {
			return nil, err
		}
		return &VersionedStore{storeCodec: t.storeCodec(spec, topic), bytes: b}, nil
	})
}

// VersionedStore returns the task's partition of a versioned store connected to this
// processor.
func (c *ProcessorContext) VersionedStore(name string) (*VersionedStore, error) {
	partition, err := c.storePartition(name)
	if err != nil {
		return nil, err
	}
	return c.task.t.versionedStore(name, partition, c.task)
}

// VersionedStore returns one partition of a versioned key-value store.
func (d *Driver) VersionedStore(name string, partition int32) (*VersionedStore, error) {
	return d.topo.VersionedStore(name, partition)
}

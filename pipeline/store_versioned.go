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

// VersionInfo is one version of a key as the put rule sees it (VersionedPut).
type VersionInfo struct {
	Timestamp int64
	Tombstone bool
	// NoGap marks a value that follows no gap in Kafka's history where its version before
	// would say it does (VersionedPut).
	NoGap bool
}

// VersionedPutEffect is what a put does besides writing its version.
type VersionedPutEffect struct {
	// Forget: drop the version at the put's timestamp, the latest value, and write nothing.
	Forget bool
	// NoGap marks the version written.
	NoGap bool
	// MarkLatest: write the latest version again, marked NoGap.
	MarkLatest bool
	// ValidTo is the written version's validTo.
	ValidTo int64
}

// VersionedPut is Kafka Streams' RocksDBVersionedStore put rule where it parts from plain
// versions (one per timestamp, each valid until the next). Kafka keeps the latest value
// apart from its history, whose records end at their next one's timestamp or at a
// tombstone's; a value put after the history's end (after a tombstone, or on a key
// without history) leaves a gap between the two. A tombstone at the latest value's own
// timestamp only removes the latest value: when the history ends right there it is as if
// kept, after a gap it is forgotten, so that a value put later inside the gap, at an older
// timestamp, becomes the latest (docs/state.md, Versioned stores). A put into the gap
// closes it: the new version ends at the latest value.
//
// A latest value follows a gap when the version before it is a tombstone, or there is
// none, unless it is marked NoGap: a value put at the timestamp of the tombstone the history
// ends with, or the latest value when a put lands right before it. So the rule reads, of the
// key's versions, those at or after the put's timestamp ts (from, in time order, the first
// three: the common put, at or after the latest timestamp, reads one or none) and only for
// a tombstone at the latest value's timestamp whether the version before is a value
// (prevIsValue). Both versioned stores, in memory and on LevelDB, follow it.
func VersionedPut(from []VersionInfo, ts int64, tombstone bool, prevIsValue func() (bool, error)) (VersionedPutEffect, error) {
	effect := VersionedPutEffect{ValidTo: ValidToUndefined}
	if len(from) == 0 {
		return effect, nil
	}
	latest := len(from) - 1 // the latest version, if it is a value and len(from) < 3
	if from[0].Timestamp == ts {
		if len(from) > 1 {
			effect.ValidTo = from[1].Timestamp
		}
		replaced := from[0]
		switch {
		case len(from) > 1:
		case replaced.Tombstone:
			effect.NoGap = !tombstone
			return effect, nil
		case !tombstone:
			effect.NoGap = replaced.NoGap
			return effect, nil
		case replaced.NoGap:
			return effect, nil
		default:
			prevValue, err := prevIsValue()
			effect.Forget = !prevValue
			return effect, err
		}
		latest--
	} else {
		effect.ValidTo = from[0].Timestamp
	}
	// The put lands right before the latest value, closing the gap if there is one.
	effect.MarkLatest = latest == 0 && !from[len(from)-1].Tombstone && !from[len(from)-1].NoGap
	return effect, nil
}

package pipeline

import "fmt"

// versionedAsKeyValue lets a processor that keeps its results in a key-value store keep
// them in a versioned one (Kafka's KeyValueStoreWrapper, KIP-914): Get reads the latest
// version, Put writes a version at the record's timestamp and a nil value a tombstone.
// Versioned stores cannot be scanned, as in Kafka (UnsupportedOperationException).
type versionedAsKeyValue struct {
	name  string
	bytes VersionedBytesStore
}

func (s versionedAsKeyValue) Get(key []byte) ([]byte, int64, bool, error) {
	v, found, err := s.bytes.Get(key)
	return v.Value, v.Timestamp, found, err
}

func (s versionedAsKeyValue) GetWithHeaders(key []byte) ([]byte, int64, Headers, bool, error) {
	v, ts, found, err := s.Get(key)
	return v, ts, nil, found, err
}

func (s versionedAsKeyValue) Put(key, value []byte, ts int64, _ Headers) error {
	if value == nil {
		_, _, err := s.bytes.Delete(key, ts)
		return err
	}
	_, err := s.bytes.Put(key, value, ts)
	return err
}

func (s versionedAsKeyValue) Range(_, _ []byte, _ bool) BytesIterator {
	return failedIterator{fmt.Errorf("versioned store %s cannot be scanned (Kafka Streams' versioned stores have no range queries)", s.name)}
}

func (s versionedAsKeyValue) PrefixScan([]byte) BytesIterator { return s.Range(nil, nil, false) }

func (s versionedAsKeyValue) ApproximateNumEntries() (int64, error) {
	return 0, fmt.Errorf("versioned store %s does not count its entries", s.name)
}

// failedIterator is an iterator over nothing that reports err.
type failedIterator struct{ err error }

func (failedIterator) Next() bool                { return false }
func (failedIterator) Key() []byte               { return nil }
func (failedIterator) Value() []byte             { return nil }
func (failedIterator) Timestamp() int64          { return 0 }
func (failedIterator) Headers() (Headers, error) { return nil, nil }
func (it failedIterator) Err() error             { return it.err }
func (failedIterator) Close()                    {}

// versionedKeyValue is the key-value view of a versioned store's partition, made once.
func (k *Task) versionedKeyValue(name string, partition int32) (*KeyValueStore, error) {
	key := storeKey{name, partition}
	if s, ok := k.versionedKV[key]; ok {
		return s, nil
	}
	vs, err := k.t.versionedStore(name, partition, k)
	if err != nil {
		return nil, err
	}
	s := &KeyValueStore{storeCodec: vs.storeCodec, bytes: versionedAsKeyValue{name: name, bytes: vs.bytes}}
	k.versionedKV[key] = s
	return s, nil
}

package pipeline

import (
	"fmt"
	"sort"
)

// StoreType is the kind of a state store the engine uses.
type StoreType int

const (
	KeyValueStoreType StoreType = iota + 1
	TimestampedKeyValueStoreType
)

func (t StoreType) String() string {
	switch t {
	case KeyValueStoreType:
		return "keyValue"
	case TimestampedKeyValueStoreType:
		return "timestampedKeyValue"
	}
	return fmt.Sprintf("StoreType(%d)", int(t))
}

// StoreSpec declares a state store of the topology (Kafka Streams' StoreBuilder).
type StoreSpec struct {
	Name   string
	Type   StoreType
	Serdes Serdes
	// Logged stores write a changelog topic <application.id>-<name>-changelog.
	Logged bool
}

// KeyValueBytesStore is one partition of a key-value store, in bytes. Plain key-value
// stores report timestamp -1. Writes go to the current epoch; reads see them.
type KeyValueBytesStore interface {
	Get(key []byte) (value []byte, ts int64, found bool, err error)
	// Put writes value at ts; a nil value deletes the key.
	Put(key, value []byte, ts int64) error
	Range(from, to []byte, reverse bool) BytesIterator // nil bounds are open
	PrefixScan(prefix []byte) BytesIterator
	ApproximateNumEntries() (int64, error)
}

// BytesIterator walks store entries in unsigned byte order of their keys.
type BytesIterator interface {
	Next() bool
	Key() []byte
	Value() []byte
	Timestamp() int64
	Err() error
	Close()
}

// StoreProvider opens store partitions for a running topology. The agent backs it with
// LevelDB (package state); the engine only sees these interfaces.
type StoreProvider interface {
	KeyValueStore(spec StoreSpec, partition int32) (KeyValueBytesStore, error)
}

// AddStateStore declares a store processors can connect to by name.
func (b *StreamsBuilder) AddStateStore(spec StoreSpec) error {
	if spec.Name == "" {
		return fmt.Errorf("addStateStore: a store needs a name")
	}
	if _, dup := b.stores[spec.Name]; dup {
		return fmt.Errorf("addStateStore: store %q is already declared", spec.Name)
	}
	if spec.Type != KeyValueStoreType && spec.Type != TimestampedKeyValueStoreType {
		return fmt.Errorf("addStateStore %q: unknown store type %v", spec.Name, spec.Type)
	}
	spec.Serdes = b.orDefaults(spec.Serdes)
	b.stores[spec.Name] = &spec
	return nil
}

// Stores lists the declared stores by name.
func (b *StreamsBuilder) Stores() []StoreSpec {
	out := make([]StoreSpec, 0, len(b.stores))
	for _, s := range b.stores {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// KeyValueStore is one partition of a key-value store with its serdes: what a processor gets
// from getStateStore. Keys and values are serialised with the changelog topic as topic name,
// as Kafka Streams' metered stores do.
type KeyValueStore struct {
	spec  *StoreSpec
	bytes KeyValueBytesStore
	topic string
}

// Name is the store's name.
func (s *KeyValueStore) Name() string { return s.spec.Name }

// Timestamped reports whether values carry a timestamp.
func (s *KeyValueStore) Timestamped() bool { return s.spec.Type == TimestampedKeyValueStoreType }

func (s *KeyValueStore) key(k any) ([]byte, error) {
	if k == nil {
		return nil, fmt.Errorf("store %s: null keys are not allowed", s.spec.Name)
	}
	kb, err := s.spec.Serdes.Key.Serialize(s.topic, nil, k)
	if err != nil {
		return nil, fmt.Errorf("store %s: key: %w", s.spec.Name, err)
	}
	return kb, nil
}

func (s *KeyValueStore) value(b []byte) (any, error) {
	v, err := s.spec.Serdes.Value.Deserialize(s.topic, nil, b)
	if err != nil {
		return nil, fmt.Errorf("store %s: value: %w", s.spec.Name, err)
	}
	return v, nil
}

// Get returns the value of key and its timestamp (-1 for plain stores).
func (s *KeyValueStore) Get(key any) (value any, ts int64, found bool, err error) {
	kb, err := s.key(key)
	if err != nil {
		return nil, 0, false, err
	}
	vb, ts, found, err := s.bytes.Get(kb)
	if err != nil || !found {
		return nil, ts, false, err
	}
	v, err := s.value(vb)
	return v, ts, err == nil, err
}

// Put writes value under key at ts; a nil value deletes the key.
func (s *KeyValueStore) Put(key, value any, ts int64) error {
	kb, err := s.key(key)
	if err != nil {
		return err
	}
	vb, err := s.spec.Serdes.Value.Serialize(s.topic, nil, value)
	if err != nil {
		return fmt.Errorf("store %s: value: %w", s.spec.Name, err)
	}
	return s.bytes.Put(kb, vb, ts)
}

// PutIfAbsent writes value only if key has none, and returns the value that was there.
func (s *KeyValueStore) PutIfAbsent(key, value any, ts int64) (any, error) {
	old, _, found, err := s.Get(key)
	if err != nil || found {
		return old, err
	}
	return nil, s.Put(key, value, ts)
}

// Delete removes key and returns its old value; ts is the tombstone's changelog timestamp.
func (s *KeyValueStore) Delete(key any, ts int64) (any, error) {
	old, _, found, err := s.Get(key)
	if err != nil || !found {
		return nil, err
	}
	return old, s.Put(key, nil, ts)
}

// KeyValueIterator walks a range of a store, deserialising as it goes.
type KeyValueIterator struct {
	s   *KeyValueStore
	it  BytesIterator
	err error
	key any
	val any
}

// Next moves to the next entry; false at the end or on an error (see Err).
func (i *KeyValueIterator) Next() bool {
	if i.err != nil || !i.it.Next() {
		return false
	}
	k, err := i.s.spec.Serdes.Key.Deserialize(i.s.topic, nil, i.it.Key())
	if err != nil {
		i.err = fmt.Errorf("store %s: key: %w", i.s.spec.Name, err)
		return false
	}
	v, err := i.s.value(i.it.Value())
	if err != nil {
		i.err = err
		return false
	}
	i.key, i.val = k, v
	return true
}

// Key, Value and Timestamp describe the current entry.
func (i *KeyValueIterator) Key() any         { return i.key }
func (i *KeyValueIterator) Value() any       { return i.val }
func (i *KeyValueIterator) Timestamp() int64 { return i.it.Timestamp() }

// Err is the error that ended the iteration, if any.
func (i *KeyValueIterator) Err() error {
	if i.err != nil {
		return i.err
	}
	return i.it.Err()
}

// Close releases the iterator.
func (i *KeyValueIterator) Close() { i.it.Close() }

// Range iterates over keys in [from, to] (nil = open) in serialised-key order.
func (s *KeyValueStore) Range(from, to any, reverse bool) (*KeyValueIterator, error) {
	var fb, tb []byte
	var err error
	if from != nil {
		if fb, err = s.key(from); err != nil {
			return nil, err
		}
	}
	if to != nil {
		if tb, err = s.key(to); err != nil {
			return nil, err
		}
	}
	return &KeyValueIterator{s: s, it: s.bytes.Range(fb, tb, reverse)}, nil
}

// PrefixScan iterates over the keys whose serialised form starts with prefix serialised.
func (s *KeyValueStore) PrefixScan(prefix any) (*KeyValueIterator, error) {
	pb, err := s.key(prefix)
	if err != nil {
		return nil, err
	}
	return &KeyValueIterator{s: s, it: s.bytes.PrefixScan(pb)}, nil
}

// ApproximateNumEntries estimates the number of keys.
func (s *KeyValueStore) ApproximateNumEntries() (int64, error) {
	return s.bytes.ApproximateNumEntries()
}

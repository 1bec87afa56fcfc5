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
	WindowStoreType
	TimestampedWindowStoreType
	SessionStoreType
	VersionedKeyValueStoreType
)

func (t StoreType) String() string {
	switch t {
	case KeyValueStoreType:
		return "keyValue"
	case TimestampedKeyValueStoreType:
		return "timestampedKeyValue"
	case WindowStoreType:
		return "window"
	case TimestampedWindowStoreType:
		return "timestampedWindow"
	case SessionStoreType:
		return "session"
	case VersionedKeyValueStoreType:
		return "versionedKeyValue"
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
	// Headers makes a timestamped key-value or window store keep each value's record
	// headers (KIP-1271).
	Headers bool
	// Retention (window and session stores, ms): how far behind the observed stream time
	// windows and sessions stay.
	Retention int64
	// WindowSize (window stores, ms): a window ends at start + size.
	WindowSize int64
	// RetainDuplicates (window stores) keeps every put, as stream-stream join stores do.
	RetainDuplicates bool
	// HistoryRetention (versioned stores, ms): how far back get(key, asOf) answers; also
	// the grace period of writes.
	HistoryRetention int64
	// CachingDisabled turns off the record cache in front of a DSL store
	// (Materialized#withCachingDisabled).
	CachingDisabled bool
	// TopicConfig are settings of a logged store's changelog topic, over the agent's own
	// (withLoggingEnabled(Map) of Materialized, StreamJoined and Suppressed.BufferConfig).
	TopicConfig map[string]string
	// ChangelogVersion, when not 0, is the one byte of the header "v" every changelog record
	// but a tombstone carries: Kafka Streams' suppression buffer marks the layout of its
	// changelog values so (3), and reads a record without it as its oldest layout.
	ChangelogVersion byte
	// OwnLayout, when set, says what of the store's changelog is laid out StoatFlow's own way,
	// not Kafka Streams': neither can take the store over from the other's changelog
	// (docs/scaling.md).
	OwnLayout string
}

// Validate applies Kafka Streams' store builder checks (Stores.*). Package state opens
// stores only under specs that pass them.
func (s StoreSpec) Validate() error {
	if s.Name == "" {
		return fmt.Errorf("a store needs a name")
	}
	switch s.Type {
	case KeyValueStoreType, TimestampedKeyValueStoreType, WindowStoreType, TimestampedWindowStoreType, SessionStoreType, VersionedKeyValueStoreType:
	default:
		return fmt.Errorf("unknown store type %v", s.Type)
	}
	if s.Headers && s.Type != TimestampedKeyValueStoreType && s.Type != TimestampedWindowStoreType {
		return fmt.Errorf("headers-aware stores (KIP-1271) are timestampedKeyValue or timestampedWindow, not %v", s.Type)
	}
	window := s.Type == WindowStoreType || s.Type == TimestampedWindowStoreType
	if s.RetainDuplicates && !window {
		return fmt.Errorf("retainDuplicates applies to window stores only, not %v", s.Type)
	}
	switch {
	case window && s.WindowSize <= 0:
		return fmt.Errorf("window size %d ms must be positive", s.WindowSize)
	case window && s.Retention < s.WindowSize:
		return fmt.Errorf("the retention period (%d ms) must be no smaller than the window size (%d ms)", s.Retention, s.WindowSize)
	case s.Type == SessionStoreType && s.Retention <= 0:
		return fmt.Errorf("session store retention %d ms must be positive", s.Retention)
	case s.Type == VersionedKeyValueStoreType && s.HistoryRetention < 0:
		return fmt.Errorf("history retention %d ms must not be negative", s.HistoryRetention)
	}
	return nil
}

// KeyValueBytesStore is one partition of a key-value store, in bytes. Plain key-value
// stores report timestamp -1. Writes go to the current epoch; reads see them.
type KeyValueBytesStore interface {
	Get(key []byte) (value []byte, ts int64, found bool, err error)
	// GetWithHeaders is Get plus the stored headers, nil unless the store is headers-aware.
	GetWithHeaders(key []byte) (value []byte, ts int64, headers Headers, found bool, err error)
	// Put writes value at ts; a nil value deletes the key. Only headers-aware stores keep
	// headers.
	Put(key, value []byte, ts int64, headers Headers) error
	Range(from, to []byte, reverse bool) BytesIterator // nil bounds are open
	PrefixScan(prefix []byte) BytesIterator
	ApproximateNumEntries() (int64, error)
}

// BytesIterator walks store entries in unsigned byte order of their keys. Key, Value and
// Headers are valid until the next Next or Close (package state's come from LevelDB, which
// reuses its buffers); a caller that keeps one copies it.
type BytesIterator interface {
	Next() bool
	Key() []byte
	Value() []byte
	Timestamp() int64
	// Headers are the current entry's headers, nil unless the store is headers-aware.
	Headers() (Headers, error)
	Err() error
	Close()
}

// StoreProvider opens store partitions for a running topology. The agent backs it with
// LevelDB (package state); the engine only sees these interfaces.
type StoreProvider interface {
	KeyValueStore(spec StoreSpec, partition int32) (KeyValueBytesStore, error)
	WindowStore(spec StoreSpec, partition int32) (WindowBytesStore, error)
	SessionStore(spec StoreSpec, partition int32) (SessionBytesStore, error)
	VersionedStore(spec StoreSpec, partition int32) (VersionedBytesStore, error)
	// Meta and PutMeta keep small processor metadata with an opened store partition,
	// committed with the epoch's writes (Kafka Streams keeps, for instance, the last
	// emitted window close time this way). Meta returns nil when absent.
	Meta(store string, partition int32, key string) ([]byte, error)
	PutMeta(store string, partition int32, key string, value []byte) error
}

// AddStateStore declares a store processors can connect to by name.
func (b *StreamsBuilder) AddStateStore(spec StoreSpec) error {
	if spec.Name == "" {
		return fmt.Errorf("addStateStore: a store needs a name")
	}
	if err := checkName("store name", spec.Name); err != nil {
		return fmt.Errorf("addStateStore: %w", err)
	}
	if _, dup := b.stores[spec.Name]; dup {
		return fmt.Errorf("addStateStore: store %q is already declared", spec.Name)
	}
	if err := spec.Validate(); err != nil {
		return fmt.Errorf("addStateStore %q: %w", spec.Name, err)
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
	storeCodec
	bytes KeyValueBytesStore
}

// Timestamped reports whether values carry a timestamp.
func (s *KeyValueStore) Timestamped() bool { return s.spec.Type == TimestampedKeyValueStoreType }

// Get returns the value of key and its timestamp (-1 for plain stores).
func (s *KeyValueStore) Get(key any) (value any, ts int64, found bool, err error) {
	_, value, ts, found, err = s.getForUpdate(key)
	return value, ts, found, err
}

// getForUpdate is Get that also returns the serialised key, for a putSerialized of the same
// key after it: an aggregation's read and write then serialise the key once.
func (s *KeyValueStore) getForUpdate(key any) (kb []byte, value any, ts int64, found bool, err error) {
	defer s.ops.get.stop(s.ops.get.start())
	kb, err = s.key(key)
	if err != nil {
		return nil, nil, 0, false, err
	}
	vb, ts, found, err := s.bytes.Get(kb)
	if err != nil || !found {
		return kb, nil, ts, false, err
	}
	v, err := s.value(vb)
	return kb, v, ts, err == nil, err
}

// Headers reports whether the store keeps record headers with its values (KIP-1271).
func (s *KeyValueStore) Headers() bool { return s.spec.Headers }

// GetWithHeaders is Get plus the stored headers (nil unless the store is headers-aware).
func (s *KeyValueStore) GetWithHeaders(key any) (value any, ts int64, headers Headers, found bool, err error) {
	defer s.ops.get.stop(s.ops.get.start())
	kb, err := s.key(key)
	if err != nil {
		return nil, 0, nil, false, err
	}
	vb, ts, headers, found, err := s.bytes.GetWithHeaders(kb)
	if err != nil || !found {
		return nil, ts, nil, false, err
	}
	v, err := s.value(vb)
	return v, ts, headers, err == nil, err
}

// Put writes value under key at ts; a nil value deletes the key.
func (s *KeyValueStore) Put(key, value any, ts int64) error {
	return s.PutWithHeaders(key, value, ts, nil)
}

// PutWithHeaders is Put keeping headers in a headers-aware store; other stores drop them.
func (s *KeyValueStore) PutWithHeaders(key, value any, ts int64, headers Headers) error {
	defer s.ops.put.stop(s.ops.put.start())
	kb, err := s.key(key)
	if err != nil {
		return err
	}
	return s.putBytes(kb, value, ts, headers)
}

// putSerialized is Put of a key serialised by getForUpdate.
func (s *KeyValueStore) putSerialized(kb []byte, value any, ts int64) error {
	defer s.ops.put.stop(s.ops.put.start())
	return s.putBytes(kb, value, ts, nil)
}

func (s *KeyValueStore) putBytes(kb []byte, value any, ts int64, headers Headers) error {
	vb, err := s.valueBytes(value)
	if err != nil {
		return err
	}
	return s.bytes.Put(kb, vb, ts, headers)
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

// KeyValueIterator walks a range of a store, deserialising as it goes. What it hands out may
// be kept after Next: keys and values are deserialised and headers copied.
type KeyValueIterator struct {
	storeIter[keyValue]
	bytes BytesIterator
}

// keyValue is one deserialised entry of a key-value store.
type keyValue struct {
	key, val any
	headers  Headers
}

func (s *KeyValueStore) iter(it BytesIterator) *KeyValueIterator {
	return &KeyValueIterator{bytes: it, storeIter: newStoreIter(it, &s.ops.rng, func() (keyValue, error) {
		var e keyValue
		var err error
		if e.key, err = s.keyOf(it.Key()); err != nil {
			return e, err
		}
		if e.val, err = s.value(it.Value()); err != nil {
			return e, err
		}
		if s.spec.Headers {
			h, err := it.Headers()
			if err != nil {
				return e, fmt.Errorf("store %s: headers: %w", s.spec.Name, err)
			}
			e.headers = cloneHeaders(h)
		}
		return e, nil
	})}
}

// Key, Value and Timestamp describe the current entry.
func (i *KeyValueIterator) Key() any         { return i.cur.key }
func (i *KeyValueIterator) Value() any       { return i.cur.val }
func (i *KeyValueIterator) Timestamp() int64 { return i.bytes.Timestamp() }

// Headers are the current entry's headers, nil unless the store is headers-aware.
func (i *KeyValueIterator) Headers() Headers { return i.cur.headers }

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
	return s.iter(s.bytes.Range(fb, tb, reverse)), nil
}

// PrefixScan iterates over the keys whose serialised form starts with prefix serialised.
func (s *KeyValueStore) PrefixScan(prefix any) (*KeyValueIterator, error) {
	pb, err := s.key(prefix)
	if err != nil {
		return nil, err
	}
	return s.iter(s.bytes.PrefixScan(pb)), nil
}

// ApproximateNumEntries estimates the number of keys.
func (s *KeyValueStore) ApproximateNumEntries() (int64, error) {
	return s.bytes.ApproximateNumEntries()
}

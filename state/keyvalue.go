package state

import (
	"bytes"

	"github.com/stoatflow/stoatflow/pipeline"
)

// kvReader holds the reads shared by plain and timestamped key-value stores. Keys iterate
// in unsigned lexicographic order.
type kvReader struct {
	p     *partition
	level IsolationLevel
}

// Level is the isolation level of this view's reads.
func (r kvReader) Level() IsolationLevel { return r.level }

// ApproximateNumUncommittedBytes is the number of bytes buffered in this store partition
// since the last Commit or Abort.
func (r kvReader) ApproximateNumUncommittedBytes() int64 { return r.p.uncommitted.Load() }

// Range iterates the keys in [from, to]; a nil bound is unbounded. from > to is empty, as
// in Kafka Streams.
func (r kvReader) Range(from, to []byte, reverse bool) *KeyValueIterator {
	var limit []byte
	if to != nil {
		limit = append(bytes.Clone(to), 0x00)
	}
	return r.newIterator(from, limit, reverse)
}

// All iterates every key.
func (r kvReader) All(reverse bool) *KeyValueIterator {
	return r.newIterator(nil, nil, reverse)
}

// PrefixScan iterates, ascending, the keys that start with prefix.
func (r kvReader) PrefixScan(prefix []byte) *KeyValueIterator {
	if len(prefix) == 0 {
		return r.All(false)
	}
	return r.newIterator(prefix, prefixEnd(prefix), false)
}

// ApproximateNumEntries counts the entries this view sees. It walks the store: use it for
// queries and metrics, not per record.
func (r kvReader) ApproximateNumEntries() (int64, error) {
	it := r.All(false)
	defer it.Close()
	var n int64
	for it.it.next() {
		n++
	}
	if err := it.Err(); err != nil {
		return 0, err
	}
	return n, nil
}

func (r kvReader) newIterator(start, limit []byte, reverse bool) *KeyValueIterator {
	return &KeyValueIterator{p: r.p, it: r.p.iter(start, limit, reverse, r.level)}
}

// KeyValueIterator walks key-value entries. Key, Value and Headers are valid until the
// next call to Next; Close releases the iterator and must always be called.
type KeyValueIterator struct {
	p     *partition
	it    *mergeIter
	value []byte
	ts    int64
	err   error
}

// Next moves to the next entry and reports whether there is one.
func (i *KeyValueIterator) Next() bool {
	if i.err != nil || !i.it.next() {
		return false
	}
	if i.p.spec.Type != timestampedKeyValueKind {
		i.value, i.ts = i.it.value, NoTimestamp
		return true
	}
	v, ts, err := i.p.decodeTimestamped(i.it.value)
	if err != nil {
		i.err = i.p.errorf("key %x: %w", i.it.key, err)
		return false
	}
	i.value, i.ts = v, ts
	return true
}

// Key is the current key.
func (i *KeyValueIterator) Key() []byte { return i.it.key }

// Value is the current value (without the timestamp of timestamped stores).
func (i *KeyValueIterator) Value() []byte { return i.value }

// Timestamp is the current value's timestamp, NoTimestamp for plain stores.
func (i *KeyValueIterator) Timestamp() int64 { return i.ts }

// Headers are the current value's headers; nil unless the store is headers-aware.
func (i *KeyValueIterator) Headers() (pipeline.Headers, error) {
	if !i.p.spec.Headers {
		return nil, nil
	}
	h, _, err := parseHeaders(i.it.value)
	if err != nil {
		return nil, i.p.errorf("key %x: %w", i.it.key, err)
	}
	return h, nil
}

// Err reports a read or decoding error that ended the iteration.
func (i *KeyValueIterator) Err() error {
	if i.err != nil {
		return i.err
	}
	if i.it.err != nil {
		return i.p.errorf("iterate: %w", i.it.err)
	}
	return nil
}

// Close releases the iterator.
func (i *KeyValueIterator) Close() { i.it.close() }

// KeyValueView reads a plain key-value store partition at one isolation level.
type KeyValueView struct{ kvReader }

// Get returns the value of key, nil when absent. A present empty value is a non-nil
// empty slice.
func (v KeyValueView) Get(key []byte) ([]byte, error) {
	val, _, err := v.p.get(key, v.level)
	return val, err
}

// KeyValueStore is a plain key-value store partition. Its reads are READ_UNCOMMITTED.
type KeyValueStore struct {
	KeyValueView
	w *Writer
}

// View returns a read-only view at level.
func (s *KeyValueStore) View(level IsolationLevel) KeyValueView {
	return KeyValueView{kvReader{p: s.p, level: level}}
}

// Put writes key; a nil value deletes it. The value keeps no timestamp: ts, the timestamp of
// the record being processed, is its changelog record's, as Kafka Streams logs the processor
// context's.
func (s *KeyValueStore) Put(key, value []byte, ts int64) error {
	if key == nil {
		return s.p.errorf("put: null key")
	}
	if err := s.p.refuseChange(key, 0, value, nil); err != nil {
		return err
	}
	if value == nil {
		s.delete(key, ts)
		return nil
	}
	s.p.write(s.w, key, append(s.p.newValue(), value...))
	s.p.logChange(s.w, key, value, ts, nil)
	return nil
}

// PutIfAbsent writes key only when it is absent and returns the value it already had.
func (s *KeyValueStore) PutIfAbsent(key, value []byte, ts int64) ([]byte, error) {
	old, err := s.Get(key)
	if err != nil || old != nil {
		return old, err
	}
	return nil, s.Put(key, value, ts)
}

// Delete removes key; its changelog tombstone carries ts.
func (s *KeyValueStore) Delete(key []byte, ts int64) error {
	if key == nil {
		return s.p.errorf("delete: null key")
	}
	if err := s.p.refuseChange(key, 0, nil, nil); err != nil {
		return err
	}
	s.delete(key, ts)
	return nil
}

func (s *KeyValueStore) delete(key []byte, ts int64) {
	s.p.write(s.w, key, deleteEntry)
	s.p.logChange(s.w, key, nil, ts, nil)
}

// TimestampedKeyValueView reads a timestamped key-value store partition at one isolation
// level.
type TimestampedKeyValueView struct{ kvReader }

// Get returns the value of key and its timestamp; the value is nil when absent.
func (v TimestampedKeyValueView) Get(key []byte) ([]byte, int64, error) {
	raw, ok, err := v.p.get(key, v.level)
	if err != nil || !ok {
		return nil, NoTimestamp, err
	}
	val, ts, err := v.p.decodeTimestamped(raw)
	if err != nil {
		return nil, NoTimestamp, v.p.errorf("key %x: %w", key, err)
	}
	return val, ts, nil
}

// GetWithHeaders is Get plus the stored headers (nil unless the store is headers-aware).
func (v TimestampedKeyValueView) GetWithHeaders(key []byte) ([]byte, int64, pipeline.Headers, error) {
	raw, ok, err := v.p.get(key, v.level)
	if err != nil || !ok {
		return nil, NoTimestamp, nil, err
	}
	var headers pipeline.Headers
	if v.p.spec.Headers {
		if headers, raw, err = parseHeaders(raw); err != nil {
			return nil, NoTimestamp, nil, v.p.errorf("key %x: %w", key, err)
		}
	}
	val, ts, err := splitTimestamped(raw)
	if err != nil {
		return nil, NoTimestamp, nil, v.p.errorf("key %x: %w", key, err)
	}
	return val, ts, headers, nil
}

// TimestampedKeyValueStore is a timestamped key-value store partition, the kind the DSL
// materialises. Its reads are READ_UNCOMMITTED.
type TimestampedKeyValueStore struct {
	TimestampedKeyValueView
	w *Writer
}

// View returns a read-only view at level.
func (s *TimestampedKeyValueStore) View(level IsolationLevel) TimestampedKeyValueView {
	return TimestampedKeyValueView{kvReader{p: s.p, level: level}}
}

// Put writes key with its timestamp; a nil value deletes it.
func (s *TimestampedKeyValueStore) Put(key, value []byte, ts int64) error {
	return s.PutWithHeaders(key, value, ts, nil)
}

// PutWithHeaders is Put keeping headers in a headers-aware store; other stores drop them,
// as Kafka Streams' plain timestamped stores do.
func (s *TimestampedKeyValueStore) PutWithHeaders(key, value []byte, ts int64, headers pipeline.Headers) error {
	if key == nil {
		return s.p.errorf("put: null key")
	}
	if value == nil || !s.p.spec.Headers {
		headers = nil
	}
	if err := s.p.refuseChange(key, 0, value, headers); err != nil {
		return err
	}
	if value == nil {
		s.p.write(s.w, key, deleteEntry)
		s.p.logChange(s.w, key, nil, ts, nil)
		return nil
	}
	s.p.write(s.w, key, s.p.appendTimestampedValue(s.p.newValue(), value, ts, headers))
	s.p.logChange(s.w, key, value, ts, headers)
	return nil
}

// PutIfAbsent writes key only when it is absent and returns the value and timestamp it
// already had.
func (s *TimestampedKeyValueStore) PutIfAbsent(key, value []byte, ts int64) ([]byte, int64, error) {
	old, oldTs, err := s.Get(key)
	if err != nil || old != nil {
		return old, oldTs, err
	}
	return nil, NoTimestamp, s.Put(key, value, ts)
}

// Delete removes key; its changelog tombstone carries ts.
func (s *TimestampedKeyValueStore) Delete(key []byte, ts int64) error {
	if key == nil {
		return s.p.errorf("delete: null key")
	}
	return s.Put(key, nil, ts)
}

// appendTimestampedValue appends the stored form of a timestamped value:
// [ts][value], or [headers][ts][value] for headers-aware stores.
func (p *partition) appendTimestampedValue(dst, value []byte, ts int64, headers pipeline.Headers) []byte {
	if p.spec.Headers {
		dst = appendHeaders(dst, headers)
	}
	return appendTimestamped(dst, value, ts)
}

func (p *partition) decodeTimestamped(raw []byte) ([]byte, int64, error) {
	if p.spec.Headers {
		var err error
		if raw, err = skipHeaders(raw); err != nil {
			return nil, 0, err
		}
	}
	return splitTimestamped(raw)
}

package pipeline

import (
	"fmt"
	"math"
)

// WindowBytesStore is one partition of a window store, in bytes. Windows older than the
// observed stream time (the largest window start put) minus the retention are invisible.
type WindowBytesStore interface {
	// Put writes key's window starting at windowStart; a nil value deletes it. It reports
	// false when the window had already expired and the write was dropped. Only
	// headers-aware stores keep headers.
	Put(key []byte, windowStart int64, value []byte, ts int64, headers Headers) (bool, error)
	// Get reads key's window starting at windowStart, the first one of a store retaining
	// duplicates: what Fetch(key, windowStart, windowStart) would yield first, without an
	// iterator. The value is the store's: callers must not write to it.
	Get(key []byte, windowStart int64) (value []byte, ts int64, headers Headers, found bool, err error)
	// Fetch iterates key's windows whose start is in [from, to], by start.
	Fetch(key []byte, from, to int64, backward bool) WindowBytesIterator
	// FetchRange iterates the windows of the keys in [keyFrom, keyTo] (nil = unbounded)
	// whose start is in [from, to], by key and then start.
	FetchRange(keyFrom, keyTo []byte, from, to int64, backward bool) WindowBytesIterator
	// HoldFrom keeps every window starting at or after start stored past the retention,
	// until a later HoldFrom moves on (math.MaxInt64, where a store starts, holds none):
	// other reads still hide expired windows; a put (or delete) of a held window is kept.
	HoldFrom(start int64)
	// FetchHeld iterates every stored window starting in [from, to], by key and then
	// start, held expired ones included.
	FetchHeld(from, to int64) WindowBytesIterator
}

// WindowBytesIterator walks windows; Key, Value and Headers are valid until the next Next
// or Close.
type WindowBytesIterator interface {
	Next() bool
	Key() []byte
	Start() int64
	Value() []byte
	Timestamp() int64
	// Headers are the current window's headers, nil unless the store is headers-aware.
	Headers() (Headers, error)
	Err() error
	Close()
}

// WindowStore is one partition of a window store with its serdes (Kafka Streams'
// WindowStore and TimestampedWindowStore).
type WindowStore struct {
	storeCodec
	bytes WindowBytesStore
}

// Timestamped reports whether the store was declared timestamped (values carry their
// record timestamp; both kinds keep it).
func (s *WindowStore) Timestamped() bool { return s.spec.Type == TimestampedWindowStoreType }

// Headers reports whether the store keeps record headers with its values (KIP-1271).
func (s *WindowStore) Headers() bool { return s.spec.Headers }

// WindowSize is the size of the store's windows in ms.
func (s *WindowStore) WindowSize() int64 { return s.spec.WindowSize }

// Put writes value as key's window starting at windowStart, with timestamp ts; a nil value
// deletes the window. It reports false when the window had expired and the record was
// dropped.
func (s *WindowStore) Put(key, value any, windowStart, ts int64) (bool, error) {
	return s.PutWithHeaders(key, value, windowStart, ts, nil)
}

// PutWithHeaders is Put keeping headers in a headers-aware store; other stores drop them.
func (s *WindowStore) PutWithHeaders(key, value any, windowStart, ts int64, headers Headers) (bool, error) {
	defer s.ops.put.stop(s.ops.put.start())
	kb, err := s.key(key)
	if err != nil {
		return false, err
	}
	vb, err := s.valueBytes(value)
	if err != nil {
		return false, err
	}
	return s.bytes.Put(kb, windowStart, vb, ts, headers)
}

// putSerialized is Put of a key and value already serialised (vb nil deletes), for an
// aggregation that reads and writes one key's windows.
func (s *WindowStore) putSerialized(kb []byte, windowStart int64, vb []byte, ts int64) (bool, error) {
	defer s.ops.put.stop(s.ops.put.start())
	return s.bytes.Put(kb, windowStart, vb, ts, nil)
}

// Window is one window of a store: its key, bounds and value.
type Window struct {
	Key        any
	Start, End int64
	Value      any
	Timestamp  int64
	Headers    Headers // nil unless the store is headers-aware
}

// Fetch returns key's window starting at windowStart (Kafka Streams' fetch(key, time)).
// The window's Key is key itself, not a deserialised copy.
func (s *WindowStore) Fetch(key any, windowStart int64) (Window, bool, error) {
	kb, err := s.key(key)
	if err != nil {
		return Window{}, false, err
	}
	return s.fetchSerialized(key, kb, windowStart)
}

// fetchSerialized is Fetch of key, serialised as kb.
func (s *WindowStore) fetchSerialized(key any, kb []byte, windowStart int64) (Window, bool, error) {
	defer s.ops.get.stop(s.ops.get.start())
	vb, ts, headers, found, err := s.bytes.Get(kb, windowStart)
	if err != nil || !found {
		return Window{}, false, err
	}
	v, err := s.value(vb)
	if err != nil {
		return Window{}, false, err
	}
	w := Window{Key: key, Start: windowStart, End: windowEnd(windowStart, s.spec.WindowSize), Value: v, Timestamp: ts}
	if s.spec.Headers {
		w.Headers = headers
	}
	return w, true, nil
}

// FetchKey iterates key's windows whose start is in [from, to], by start (Kafka Streams'
// fetch(key, from, to) and backwardFetch).
func (s *WindowStore) FetchKey(key any, from, to int64, backward bool) (*WindowIterator, error) {
	kb, err := s.key(key)
	if err != nil {
		return nil, err
	}
	return s.iter(s.bytes.Fetch(kb, from, to, backward)), nil
}

// FetchRange iterates the windows of the keys in [keyFrom, keyTo] (nil = unbounded) whose
// start is in [from, to], by serialised key and then start (fetch(keyFrom, keyTo, from, to)).
func (s *WindowStore) FetchRange(keyFrom, keyTo any, from, to int64, backward bool) (*WindowIterator, error) {
	kf, err := s.optKey(keyFrom)
	if err != nil {
		return nil, err
	}
	kt, err := s.optKey(keyTo)
	if err != nil {
		return nil, err
	}
	return s.iter(s.bytes.FetchRange(kf, kt, from, to, backward)), nil
}

// FetchAll iterates every window whose start is in [from, to], by serialised key and then
// start (Kafka Streams' stores order this by time).
func (s *WindowStore) FetchAll(from, to int64, backward bool) *WindowIterator {
	return s.iter(s.bytes.FetchRange(nil, nil, from, to, backward))
}

// All iterates every window the store holds.
func (s *WindowStore) All(backward bool) *WindowIterator {
	return s.FetchAll(math.MinInt64, math.MaxInt64, backward)
}

// WindowIterator walks windows, deserialising as it goes; its windows may be kept after
// Next (see KeyValueIterator).
type WindowIterator struct{ storeIter[Window] }

func (s *WindowStore) iter(it WindowBytesIterator) *WindowIterator {
	return &WindowIterator{newStoreIter(it, &s.ops.rng, func() (Window, error) {
		w := Window{Start: it.Start(), Timestamp: it.Timestamp()}
		w.End = windowEnd(w.Start, s.spec.WindowSize)
		var err error
		if w.Key, err = s.keyOf(it.Key()); err != nil {
			return w, err
		}
		if w.Value, err = s.value(it.Value()); err != nil {
			return w, err
		}
		if s.spec.Headers {
			h, err := it.Headers()
			if err != nil {
				return w, fmt.Errorf("store %s: headers: %w", s.spec.Name, err)
			}
			w.Headers = cloneHeaders(h)
		}
		return w, nil
	})}
}

// Window is the current window.
func (i *WindowIterator) Window() Window { return i.cur }

// windowEnd is start + size, or math.MaxInt64 on overflow, as Kafka Streams' TimeWindow.
func windowEnd(start, size int64) int64 {
	if start > math.MaxInt64-size {
		return math.MaxInt64
	}
	return start + size
}

// WindowStore returns one partition of a declared window store, for queries and tests.
func (t *Topology) WindowStore(name string, partition int32) (*WindowStore, error) {
	return t.windowStore(name, partition, nil)
}

func (t *Topology) windowStore(name string, partition int32, from *Task) (*WindowStore, error) {
	m, err := t.storeHandles(name, partition, from)
	if err != nil {
		return nil, err
	}
	return openStore(t, m, name, partition, "window", func(spec *StoreSpec, topic string) (*WindowStore, error) {
		if spec.Type != WindowStoreType && spec.Type != TimestampedWindowStoreType {
			return nil, errWrongStoreType(spec, "window")
		}
		b, err := t.storeProvider.WindowStore(*spec, partition)
		if err != nil {
			return nil, err
		}
		return &WindowStore{storeCodec: t.storeCodec(spec, topic), bytes: b}, nil
	})
}

// WindowStore returns the task's partition of a window store connected to this processor.
func (c *ProcessorContext) WindowStore(name string) (*WindowStore, error) {
	partition, err := c.storePartition(name)
	if err != nil {
		return nil, err
	}
	return c.task.t.windowStore(name, partition, c.task)
}

// WindowStore returns one partition of a window store.
func (d *Driver) WindowStore(name string, partition int32) (*WindowStore, error) {
	return d.topo.WindowStore(name, partition)
}

package pipeline

import (
	"math"
)

// SessionBytesStore is one partition of a session store, in bytes. Sessions [start, end]
// are inclusive; those whose end is older than the observed stream time (the largest
// session end put) minus the retention are invisible.
type SessionBytesStore interface {
	// Put writes the aggregate of key's session; a nil aggregate removes it. ts is the
	// changelog record's timestamp. It reports false when the session had already expired
	// and the write was dropped.
	Put(key []byte, start, end int64, agg []byte, ts int64) (bool, error)
	// FindSessions iterates key's sessions with end >= earliestEnd and start <=
	// latestStart, by end and then start.
	FindSessions(key []byte, earliestEnd, latestStart int64, backward bool) SessionBytesIterator
	// FindSessionsRange is FindSessions over the keys in [keyFrom, keyTo] (nil = unbounded).
	FindSessionsRange(keyFrom, keyTo []byte, earliestEnd, latestStart int64, backward bool) SessionBytesIterator
	// FetchSession returns the aggregate of key's session [start, end].
	FetchSession(key []byte, start, end int64) (agg []byte, found bool, err error)
	// HoldFrom keeps every session ending at or after end stored past the retention, until
	// a later HoldFrom moves on (math.MaxInt64, where a store starts, holds none): other
	// reads still hide expired sessions; a put (or delete) of a held session is kept.
	HoldFrom(end int64)
	// FetchHeld iterates every stored session ending in [from, to], by key, end and start,
	// held expired ones included.
	FetchHeld(from, to int64) SessionBytesIterator
}

// SessionBytesIterator walks sessions; Key and Value are valid until the next Next or Close.
type SessionBytesIterator interface {
	Next() bool
	Key() []byte
	Start() int64
	End() int64
	Value() []byte
	Err() error
	Close()
}

// SessionStore is one partition of a session store with its serdes (Kafka Streams'
// SessionStore).
type SessionStore struct {
	storeCodec
	bytes SessionBytesStore
}

// Put writes agg as the aggregate of key's session [start, end]; a nil aggregate removes
// it. ts is the changelog timestamp (the record being processed). It reports false when
// the session had expired and the record was dropped.
func (s *SessionStore) Put(key any, start, end int64, agg any, ts int64) (bool, error) {
	defer s.ops.put.stop(s.ops.put.start())
	kb, err := s.key(key)
	if err != nil {
		return false, err
	}
	vb, err := s.valueBytes(agg)
	if err != nil {
		return false, err
	}
	return s.bytes.Put(kb, start, end, vb, ts)
}

// Remove deletes key's session [start, end].
func (s *SessionStore) Remove(key any, start, end, ts int64) error {
	_, err := s.Put(key, start, end, nil, ts)
	return err
}

// FetchSession returns the aggregate of key's session [start, end].
func (s *SessionStore) FetchSession(key any, start, end int64) (any, bool, error) {
	defer s.ops.get.stop(s.ops.get.start())
	kb, err := s.key(key)
	if err != nil {
		return nil, false, err
	}
	vb, found, err := s.bytes.FetchSession(kb, start, end)
	if err != nil || !found {
		return nil, false, err
	}
	v, err := s.value(vb)
	return v, err == nil, err
}

// FindSessions iterates key's sessions that end at or after earliestEnd and start at or
// before latestStart, by end and then start (backward reverses).
func (s *SessionStore) FindSessions(key any, earliestEnd, latestStart int64, backward bool) (*SessionIterator, error) {
	kb, err := s.key(key)
	if err != nil {
		return nil, err
	}
	return s.iter(s.bytes.FindSessions(kb, earliestEnd, latestStart, backward)), nil
}

// FindSessionsRange is FindSessions over the keys in [keyFrom, keyTo] (nil = unbounded),
// by serialised key, end and start.
func (s *SessionStore) FindSessionsRange(keyFrom, keyTo any, earliestEnd, latestStart int64, backward bool) (*SessionIterator, error) {
	kf, err := s.optKey(keyFrom)
	if err != nil {
		return nil, err
	}
	kt, err := s.optKey(keyTo)
	if err != nil {
		return nil, err
	}
	return s.iter(s.bytes.FindSessionsRange(kf, kt, earliestEnd, latestStart, backward)), nil
}

// Fetch iterates every session of key (Kafka Streams' fetch(key) and backwardFetch).
func (s *SessionStore) Fetch(key any, backward bool) (*SessionIterator, error) {
	return s.FindSessions(key, math.MinInt64, math.MaxInt64, backward)
}

// FetchRange iterates every session of the keys in [keyFrom, keyTo].
func (s *SessionStore) FetchRange(keyFrom, keyTo any, backward bool) (*SessionIterator, error) {
	return s.FindSessionsRange(keyFrom, keyTo, math.MinInt64, math.MaxInt64, backward)
}

// Session is one session of a store: its key, bounds (inclusive) and aggregate.
type Session struct {
	Key        any
	Start, End int64
	Value      any
}

// SessionIterator walks sessions, deserialising as it goes; its sessions may be kept after
// Next (see KeyValueIterator).
type SessionIterator struct{ storeIter[Session] }

func (s *SessionStore) iter(it SessionBytesIterator) *SessionIterator {
	return &SessionIterator{newStoreIter(it, &s.ops.rng, func() (Session, error) {
		ses := Session{Start: it.Start(), End: it.End()}
		var err error
		if ses.Key, err = s.keyOf(it.Key()); err != nil {
			return ses, err
		}
		ses.Value, err = s.value(it.Value())
		return ses, err
	})}
}

// Session is the current session.
func (i *SessionIterator) Session() Session { return i.cur }

// SessionStore returns one partition of a declared session store, for queries and tests.
func (t *Topology) SessionStore(name string, partition int32) (*SessionStore, error) {
	return t.sessionStore(name, partition, nil)
}

func (t *Topology) sessionStore(name string, partition int32, from *Task) (*SessionStore, error) {
	m, err := t.storeHandles(name, partition, from)
	if err != nil {
		return nil, err
	}
	return openStore(t, m, name, partition, "session", func(spec *StoreSpec, topic string) (*SessionStore, error) {
		if spec.Type != SessionStoreType {
			return nil, errWrongStoreType(spec, "session")
		}
		b, err := t.storeProvider.SessionStore(*spec, partition)
		if err != nil {
			return nil, err
		}
		return &SessionStore{storeCodec: t.storeCodec(spec, topic), bytes: b}, nil
	})
}

// SessionStore returns the task's partition of a session store connected to this processor.
func (c *ProcessorContext) SessionStore(name string) (*SessionStore, error) {
	partition, err := c.storePartition(name)
	if err != nil {
		return nil, err
	}
	return c.task.t.sessionStore(name, partition, c.task)
}

// SessionStore returns one partition of a session store.
func (d *Driver) SessionStore(name string, partition int32) (*SessionStore, error) {
	return d.topo.SessionStore(name, partition)
}

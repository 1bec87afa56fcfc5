package state

import (
	"github.com/stoatflow/stoatflow/pipeline"
)

// StoreProvider returns db as the engine opens its stores (pipeline.StoreProvider), writing
// into the main writer. Its stores read at READ_UNCOMMITTED and write into the epoch, like
// the handles DB opens; they differ from those only where the engine's interfaces want
// another shape (a found flag, interface-typed iterators).
func (db *DB) StoreProvider() pipeline.StoreProvider { return provider{db.main} }

type provider struct{ w *Writer }

func (p provider) KeyValueStore(spec pipeline.StoreSpec, partition int32) (pipeline.KeyValueBytesStore, error) {
	if spec.Type == pipeline.TimestampedKeyValueStoreType {
		s, err := p.w.TimestampedKeyValueStore(spec, partition)
		if err != nil {
			return nil, err
		}
		return engineTimestampedKV{s}, nil
	}
	s, err := p.w.KeyValueStore(spec, partition)
	if err != nil {
		return nil, err
	}
	return enginePlainKV{s}, nil
}

func (p provider) WindowStore(spec pipeline.StoreSpec, partition int32) (pipeline.WindowBytesStore, error) {
	s, err := p.w.WindowStore(spec, partition)
	if err != nil {
		return nil, err
	}
	return engineWindow{s}, nil
}

func (p provider) SessionStore(spec pipeline.StoreSpec, partition int32) (pipeline.SessionBytesStore, error) {
	s, err := p.w.SessionStore(spec, partition)
	if err != nil {
		return nil, err
	}
	return engineSession{s}, nil
}

func (p provider) VersionedStore(spec pipeline.StoreSpec, partition int32) (pipeline.VersionedBytesStore, error) {
	s, err := p.w.VersionedStore(spec, partition)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (p provider) Meta(store string, partition int32, key string) ([]byte, error) {
	return p.w.db.Meta(store, partition, key)
}

func (p provider) PutMeta(store string, partition int32, key string, value []byte) error {
	return p.w.PutMeta(store, partition, key, value)
}

// enginePlainKV reports NoTimestamp and no headers: a plain store keeps neither.
type enginePlainKV struct{ s *KeyValueStore }

func (e enginePlainKV) Get(key []byte) ([]byte, int64, bool, error) {
	v, err := e.s.Get(key)
	return v, NoTimestamp, v != nil, err
}

func (e enginePlainKV) GetWithHeaders(key []byte) ([]byte, int64, pipeline.Headers, bool, error) {
	v, ts, found, err := e.Get(key)
	return v, ts, nil, found, err
}

func (e enginePlainKV) Put(key, value []byte, ts int64, _ pipeline.Headers) error {
	return e.s.Put(key, value, ts)
}

func (e enginePlainKV) Range(from, to []byte, reverse bool) pipeline.BytesIterator {
	return e.s.Range(from, to, reverse)
}

func (e enginePlainKV) PrefixScan(prefix []byte) pipeline.BytesIterator {
	return e.s.PrefixScan(prefix)
}

func (e enginePlainKV) ApproximateNumEntries() (int64, error) { return e.s.ApproximateNumEntries() }

type engineTimestampedKV struct{ s *TimestampedKeyValueStore }

func (e engineTimestampedKV) Get(key []byte) ([]byte, int64, bool, error) {
	v, ts, err := e.s.Get(key)
	return v, ts, v != nil, err
}

func (e engineTimestampedKV) GetWithHeaders(key []byte) ([]byte, int64, pipeline.Headers, bool, error) {
	v, ts, h, err := e.s.GetWithHeaders(key)
	return v, ts, h, v != nil, err
}

func (e engineTimestampedKV) Put(key, value []byte, ts int64, headers pipeline.Headers) error {
	return e.s.PutWithHeaders(key, value, ts, headers)
}

func (e engineTimestampedKV) Range(from, to []byte, reverse bool) pipeline.BytesIterator {
	return e.s.Range(from, to, reverse)
}

func (e engineTimestampedKV) PrefixScan(prefix []byte) pipeline.BytesIterator {
	return e.s.PrefixScan(prefix)
}

func (e engineTimestampedKV) ApproximateNumEntries() (int64, error) {
	return e.s.ApproximateNumEntries()
}

type engineWindow struct{ s *WindowStore }

func (e engineWindow) Put(key []byte, windowStart int64, value []byte, ts int64, headers pipeline.Headers) (bool, error) {
	return e.s.PutWithHeaders(key, windowStart, value, ts, headers)
}

func (e engineWindow) Get(key []byte, windowStart int64) ([]byte, int64, pipeline.Headers, bool, error) {
	v, ts, h, err := e.s.GetWithHeaders(key, windowStart)
	return v, ts, h, v != nil, err
}

func (e engineWindow) Fetch(key []byte, from, to int64, backward bool) pipeline.WindowBytesIterator {
	return e.s.Fetch(key, from, to, backward)
}

func (e engineWindow) FetchRange(keyFrom, keyTo []byte, from, to int64, backward bool) pipeline.WindowBytesIterator {
	return e.s.FetchRange(keyFrom, keyTo, from, to, backward)
}

func (e engineWindow) HoldFrom(start int64) { e.s.HoldFrom(start) }

func (e engineWindow) FetchHeld(from, to int64) pipeline.WindowBytesIterator {
	return e.s.FetchHeld(from, to)
}

type engineSession struct{ s *SessionStore }

func (e engineSession) Put(key []byte, start, end int64, agg []byte, ts int64) (bool, error) {
	return e.s.Put(key, start, end, agg, ts)
}

func (e engineSession) FindSessions(key []byte, earliestEnd, latestStart int64, backward bool) pipeline.SessionBytesIterator {
	return e.s.FindSessions(key, earliestEnd, latestStart, backward)
}

func (e engineSession) FindSessionsRange(keyFrom, keyTo []byte, earliestEnd, latestStart int64, backward bool) pipeline.SessionBytesIterator {
	return e.s.FindSessionsRange(keyFrom, keyTo, earliestEnd, latestStart, backward)
}

func (e engineSession) HoldFrom(end int64) { e.s.HoldFrom(end) }

func (e engineSession) FetchHeld(from, to int64) pipeline.SessionBytesIterator {
	return e.s.FetchHeld(from, to)
}

func (e engineSession) FetchSession(key []byte, start, end int64) ([]byte, bool, error) {
	v, err := e.s.FetchSession(key, start, end)
	return v, v != nil, err
}

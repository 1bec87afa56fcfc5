package state

import (
	"math"
)

// Session store keys in LevelDB are [escaped key][end][start]: one key's sessions are
// contiguous and ordered by end, then start, as in Kafka Streams. The changelog key is
// Kafka Streams' [key][end][start]; values are the raw aggregate.

func appendSessionKey(dst, key []byte, start, end int64) []byte {
	dst = appendEscaped(dst, key)
	dst = appendTime(dst, end)
	return appendTime(dst, start)
}

// SessionView reads a session store partition at one isolation level. Sessions whose end
// is older than the observed stream time minus the retention (plus one) are invisible.
type SessionView struct {
	p     *partition
	level IsolationLevel
}

// Level is the isolation level of this view's reads.
func (v SessionView) Level() IsolationLevel { return v.level }

// ApproximateNumUncommittedBytes is the number of bytes buffered in this store partition
// since the last Commit or Abort.
func (v SessionView) ApproximateNumUncommittedBytes() int64 { return v.p.uncommitted.Load() }

func (v SessionView) cutoff() int64 {
	return retentionCutoff(v.p.streamTimeAt(v.level), v.p.spec.Retention)
}

// FindSessions iterates key's sessions with end >= earliestSessionEnd and
// start <= latestSessionStart, by end and then start.
func (v SessionView) FindSessions(key []byte, earliestSessionEnd, latestSessionStart int64, backward bool) *SessionIterator {
	earliestSessionEnd = max(earliestSessionEnd, v.cutoff())
	start, limit := keyTimeBounds(key, earliestSessionEnd, math.MaxInt64)
	return v.newIterator(start, limit, earliestSessionEnd, latestSessionStart, backward)
}

// FindSessionsRange is FindSessions over the keys in [keyFrom, keyTo] (nil = unbounded),
// by key, end and start.
func (v SessionView) FindSessionsRange(keyFrom, keyTo []byte, earliestSessionEnd, latestSessionStart int64, backward bool) *SessionIterator {
	start, limit := keyRangeBounds(keyFrom, keyTo)
	return v.newIterator(start, limit, max(earliestSessionEnd, v.cutoff()), latestSessionStart, backward)
}

// FetchSession returns the aggregate of key's session [start, end], nil when absent.
func (v SessionView) FetchSession(key []byte, start, end int64) ([]byte, error) {
	if end < v.cutoff() {
		return nil, nil
	}
	val, _, err := v.p.get(appendSessionKey(nil, key, start, end), v.level)
	return val, err
}

// FetchHeld iterates every stored session ending in [from, to], by key, end and start, the
// expired ones HoldFrom kept included.
func (v SessionView) FetchHeld(from, to int64) *SessionIterator {
	it := v.newIterator(nil, nil, from, math.MaxInt64, false)
	it.latestEnd = to
	return it
}

// Fetch iterates every session of key.
func (v SessionView) Fetch(key []byte, backward bool) *SessionIterator {
	return v.FindSessions(key, 0, math.MaxInt64, backward)
}

// FetchRange iterates every session of the keys in [keyFrom, keyTo].
func (v SessionView) FetchRange(keyFrom, keyTo []byte, backward bool) *SessionIterator {
	return v.FindSessionsRange(keyFrom, keyTo, 0, math.MaxInt64, backward)
}

func (v SessionView) newIterator(start, limit []byte, earliestEnd, latestStart int64, backward bool) *SessionIterator {
	return &SessionIterator{p: v.p, it: v.p.iter(start, limit, backward, v.level), earliestEnd: earliestEnd, latestStart: latestStart,
		latestEnd: math.MaxInt64}
}

// SessionIterator walks sessions. Key and Value are valid until the next call to Next;
// Close releases the iterator and must always be called.
type SessionIterator struct {
	p                        *partition
	it                       *mergeIter
	earliestEnd, latestStart int64
	latestEnd                int64
	key                      []byte
	start, end               int64
	err                      error
}

// Next moves to the next session and reports whether there is one.
func (i *SessionIterator) Next() bool {
	for i.err == nil && i.it.next() {
		key, suffix, err := splitTimedKey(i.it.key, sessionTail)
		if err != nil {
			i.err = i.p.errorf("%w", err)
			return false
		}
		end, start := readTime(suffix), readTime(suffix[tsSize:])
		if end < i.earliestEnd || end > i.latestEnd || start > i.latestStart {
			continue
		}
		i.key, i.start, i.end = key, start, end
		return true
	}
	return false
}

// Key is the current session's record key.
func (i *SessionIterator) Key() []byte { return i.key }

// Start is the current session's start.
func (i *SessionIterator) Start() int64 { return i.start }

// End is the current session's end (inclusive).
func (i *SessionIterator) End() int64 { return i.end }

// Value is the current session's aggregate.
func (i *SessionIterator) Value() []byte { return i.it.value }

// Err reports a read or decoding error that ended the iteration.
func (i *SessionIterator) Err() error {
	if i.err != nil {
		return i.err
	}
	if i.it.err != nil {
		return i.p.errorf("iterate: %w", i.it.err)
	}
	return nil
}

// Close releases the iterator.
func (i *SessionIterator) Close() { i.it.close() }

// SessionStore is a session store partition. Its reads are READ_UNCOMMITTED.
type SessionStore struct {
	SessionView
	w *Writer
}

// View returns a read-only view at level.
func (s *SessionStore) View(level IsolationLevel) SessionView {
	return SessionView{p: s.p, level: level}
}

// HoldFrom keeps every session ending at or after end stored past the retention, as
// WindowStore.HoldFrom does windows: an aggregation emitting final results holds the
// sessions the watermark has not closed yet, and one it accepts can end just past the
// retention (KStreamSessionWindowAggregate takes a session ending at stream time − gap −
// grace, which the retention gap + grace expires; Kafka's RocksDB store keeps it, as it
// drops whole segments only).
func (s *SessionStore) HoldFrom(end int64) { s.p.hold.Store(end) }

// Put writes the aggregate of key's session [start, end]; a nil value removes it. ts, the
// timestamp of the record being processed, is its changelog record's. It reports false when
// the session had already expired and the put was dropped.
func (s *SessionStore) Put(key []byte, start, end int64, value []byte, ts int64) (bool, error) {
	p := s.p
	if key == nil {
		return false, p.errorf("put: null key")
	}
	if start > end {
		return false, p.errorf("put: session start %d is after its end %d", start, end)
	}
	p.observe(s.w, end)
	if end < p.expiryCutoff(p.streamTime.Load()) {
		return false, nil
	}
	if err := p.refuseChange(key, sessionChangelogSuffix, value, nil); err != nil {
		return false, err
	}
	p.kbuf = appendSessionKey(p.kbuf[:0], key, start, end)
	if value == nil {
		p.write(s.w, p.kbuf, deleteEntry)
	} else {
		p.write(s.w, p.kbuf, append(p.newValue(), value...))
		p.indexExpiry(p.kbuf, end)
	}
	if p.spec.Logged {
		p.ckbuf = appendSessionChangelogKey(p.ckbuf[:0], key, start, end)
		p.logChange(s.w, p.ckbuf, value, ts, nil)
	}
	return true, nil
}

// Remove deletes key's session [start, end]; its changelog tombstone carries ts.
func (s *SessionStore) Remove(key []byte, start, end, ts int64) error {
	_, err := s.Put(key, start, end, nil, ts)
	return err
}

package state

import (
	"bytes"
	"encoding/binary"
	"math"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Window store keys in LevelDB are [escaped key][window start][seqnum], so one key's windows
// are contiguous and ordered by start, and fetch(key, from, to) is one range scan. The
// changelog key is Kafka Streams' [key][start][seqnum].

func appendWindowKey(dst, key []byte, start int64, seq int32) []byte {
	dst = appendEscaped(dst, key)
	dst = appendTime(dst, start)
	return binary.BigEndian.AppendUint32(dst, uint32(seq))
}

// retentionCutoff is the oldest window start (session end) still visible.
func retentionCutoff(streamTime, retention int64) int64 {
	return saturatingCutoff(streamTime, retention)
}

// WindowView reads a window store partition at one isolation level. Windows whose start
// is older than the observed stream time minus the retention (plus one) are invisible.
type WindowView struct {
	p     *partition
	level IsolationLevel
}

// Level is the isolation level of this view's reads.
func (v WindowView) Level() IsolationLevel { return v.level }

// ApproximateNumUncommittedBytes is the number of bytes buffered in this store partition
// since the last Commit or Abort.
func (v WindowView) ApproximateNumUncommittedBytes() int64 { return v.p.uncommitted.Load() }

func (v WindowView) cutoff() int64 {
	return retentionCutoff(v.p.streamTimeAt(v.level), v.p.spec.Retention)
}

// Get returns the value and timestamp of key's window starting at windowStart (the first
// one of a store retaining duplicates); the value is nil when absent. It sees what
// Fetch(key, windowStart, windowStart) sees, without opening an iterator.
func (v WindowView) Get(key []byte, windowStart int64) ([]byte, int64, error) {
	raw, ok, err := v.raw(key, windowStart)
	if err != nil || !ok {
		return nil, NoTimestamp, err
	}
	val, ts, err := v.p.decodeTimestamped(raw)
	if err != nil {
		return nil, NoTimestamp, v.p.errorf("window %x@%d: %w", key, windowStart, err)
	}
	return val, ts, nil
}

// GetWithHeaders is Get plus the stored headers (nil unless the store is headers-aware).
func (v WindowView) GetWithHeaders(key []byte, windowStart int64) ([]byte, int64, pipeline.Headers, error) {
	raw, ok, err := v.raw(key, windowStart)
	if err != nil || !ok {
		return nil, NoTimestamp, nil, err
	}
	var headers pipeline.Headers
	if v.p.spec.Headers {
		if headers, raw, err = parseHeaders(raw); err != nil {
			return nil, NoTimestamp, nil, v.p.errorf("window %x@%d: %w", key, windowStart, err)
		}
	}
	val, ts, err := splitTimestamped(raw)
	if err != nil {
		return nil, NoTimestamp, nil, v.p.errorf("window %x@%d: %w", key, windowStart, err)
	}
	return val, ts, headers, nil
}

// raw returns the stored value of key's window starting at windowStart, under Fetch's
// retention cutoff. The value is shared with the buffer or the cache: callers must not
// write to it.
func (v WindowView) raw(key []byte, windowStart int64) ([]byte, bool, error) {
	if windowStart < v.cutoff() {
		return nil, false, nil
	}
	if v.p.spec.RetainDuplicates {
		// Duplicates differ in their seqnum, so the first one is found by a scan; the
		// iterator's value dies with it.
		it := v.Fetch(key, windowStart, windowStart, false)
		defer it.Close()
		if it.Next() {
			return bytes.Clone(it.it.value), true, nil
		}
		return nil, false, it.Err()
	}
	// Sized for the escaped key, its terminator and the suffix (and a few escaped 0x00
	// bytes), so building it allocates once.
	k := appendWindowKey(make([]byte, 0, len(key)+2+windowTail+8), key, windowStart, 0)
	return v.p.get(k, v.level)
}

// Fetch iterates key's windows whose start is in [from, to], by start.
func (v WindowView) Fetch(key []byte, from, to int64, backward bool) *WindowIterator {
	from = max(from, v.cutoff())
	start, limit := keyTimeBounds(key, from, to)
	return v.newIterator(start, limit, from, to, backward)
}

// FetchHeld iterates every stored window starting in [from, to], by key and then start, the
// expired ones HoldFrom kept included.
func (v WindowView) FetchHeld(from, to int64) *WindowIterator {
	return v.newIterator(nil, nil, from, to, false)
}

// FetchRange iterates the windows of keys in [keyFrom, keyTo] (nil = unbounded) whose
// start is in [from, to], by key and then start.
func (v WindowView) FetchRange(keyFrom, keyTo []byte, from, to int64, backward bool) *WindowIterator {
	start, limit := keyRangeBounds(keyFrom, keyTo)
	return v.newIterator(start, limit, max(from, v.cutoff()), to, backward)
}

// FetchAll iterates every window whose start is in [from, to], by key and then start
// (Kafka Streams' stores order this by time; callers that need time order sort).
func (v WindowView) FetchAll(from, to int64, backward bool) *WindowIterator {
	return v.FetchRange(nil, nil, from, to, backward)
}

// All iterates every visible window, by key and then start.
func (v WindowView) All(backward bool) *WindowIterator {
	return v.FetchRange(nil, nil, math.MinInt64, math.MaxInt64, backward)
}

func (v WindowView) newIterator(start, limit []byte, from, to int64, backward bool) *WindowIterator {
	it := &WindowIterator{p: v.p, from: from, to: to}
	if from > to {
		it.it = &mergeIter{done: true}
		return it
	}
	it.it = v.p.iter(start, limit, backward, v.level)
	return it
}

// WindowIterator walks windows. Key, Value and Headers are valid until the next call to
// Next; Close releases the iterator and must always be called.
type WindowIterator struct {
	p        *partition
	it       *mergeIter
	from, to int64
	key      []byte
	start    int64
	value    []byte
	ts       int64
	err      error
}

// Next moves to the next window and reports whether there is one.
func (i *WindowIterator) Next() bool {
	for i.err == nil && i.it.next() {
		key, suffix, err := splitTimedKey(i.it.key, windowTail)
		if err != nil {
			i.err = i.p.errorf("%w", err)
			return false
		}
		start := readTime(suffix)
		if start < i.from || start > i.to {
			continue
		}
		val, ts, err := i.p.decodeTimestamped(i.it.value)
		if err != nil {
			i.err = i.p.errorf("window %x@%d: %w", key, start, err)
			return false
		}
		i.key, i.start, i.value, i.ts = key, start, val, ts
		return true
	}
	return false
}

// Key is the current window's record key.
func (i *WindowIterator) Key() []byte { return i.key }

// Start is the current window's start.
func (i *WindowIterator) Start() int64 { return i.start }

// End is the current window's end, start + window size (math.MaxInt64 on overflow).
func (i *WindowIterator) End() int64 {
	if i.start > math.MaxInt64-i.p.spec.WindowSize {
		return math.MaxInt64
	}
	return i.start + i.p.spec.WindowSize
}

// Value is the current window's value.
func (i *WindowIterator) Value() []byte { return i.value }

// Timestamp is the current value's timestamp.
func (i *WindowIterator) Timestamp() int64 { return i.ts }

// Headers are the current value's headers; nil unless the store is headers-aware.
func (i *WindowIterator) Headers() (pipeline.Headers, error) {
	if !i.p.spec.Headers {
		return nil, nil
	}
	h, _, err := parseHeaders(i.it.value)
	if err != nil {
		return nil, i.p.errorf("window %x@%d: %w", i.key, i.start, err)
	}
	return h, nil
}

// Err reports a read or decoding error that ended the iteration.
func (i *WindowIterator) Err() error {
	if i.err != nil {
		return i.err
	}
	if i.it.err != nil {
		return i.p.errorf("iterate: %w", i.it.err)
	}
	return nil
}

// Close releases the iterator.
func (i *WindowIterator) Close() { i.it.close() }

// WindowStore is a timestamped window store partition. Its reads are READ_UNCOMMITTED.
type WindowStore struct {
	WindowView
	w *Writer
}

// View returns a read-only view at level.
func (s *WindowStore) View(level IsolationLevel) WindowView {
	return WindowView{p: s.p, level: level}
}

// Put writes key's window starting at windowStart; a nil value deletes it (and is a no-op
// in a store retaining duplicates). It reports false when the window had already expired
// and the put was dropped, which callers count as a dropped record.
func (s *WindowStore) Put(key []byte, windowStart int64, value []byte, ts int64) (bool, error) {
	return s.PutWithHeaders(key, windowStart, value, ts, nil)
}

// HoldFrom keeps every window starting at or after start stored past the retention, until a
// later HoldFrom moves on (math.MaxInt64 keeps none, as a partition opens): reads other than
// FetchHeld still hide expired windows, but commits do not delete the held ones, and a put
// (or delete) of a held window is kept. A processor that still needs windows the retention hides (a
// suppression waiting for the watermark to close them) holds them.
func (s *WindowStore) HoldFrom(start int64) { s.p.hold.Store(start) }

// PutWithHeaders is Put keeping headers in a headers-aware store; other stores drop them.
func (s *WindowStore) PutWithHeaders(key []byte, windowStart int64, value []byte, ts int64, headers pipeline.Headers) (bool, error) {
	p := s.p
	if key == nil {
		return false, p.errorf("put: null key")
	}
	if value == nil && p.spec.RetainDuplicates {
		return true, nil
	}
	p.observe(s.w, windowStart)
	if windowStart < p.expiryCutoff(p.streamTime.Load()) {
		return false, nil
	}
	if !p.spec.Headers {
		headers = nil
	}
	if err := p.refuseChange(key, windowChangelogSuffix, value, headers); err != nil {
		return false, err
	}
	var seq int32
	if p.spec.RetainDuplicates {
		p.seq = (p.seq + 1) & math.MaxInt32
		p.metaChanged = true
		seq = p.seq
	}
	p.kbuf = appendWindowKey(p.kbuf[:0], key, windowStart, seq)
	k := p.kbuf
	if value == nil {
		p.write(s.w, k, deleteEntry)
	} else {
		p.write(s.w, k, p.appendTimestampedValue(p.newValue(), value, ts, headers))
		p.indexExpiry(k, windowStart)
	}
	if p.spec.Logged {
		p.ckbuf = appendWindowChangelogKey(p.ckbuf[:0], key, windowStart, seq)
		p.logChange(s.w, p.ckbuf, value, ts, headers)
	}
	return true, nil
}

//go:build iterpoison

package state

import (
	"bytes"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

// stale reports whether b reads as the pattern retired iterator bytes are overwritten with
// (b may start anywhere in it: a value is often a slice of what the iterator handed out).
func stale(b []byte) bool {
	return len(b) > 0 && bytes.Contains(bytes.Repeat([]byte(stalePattern), len(b)/len(stalePattern)+2), b)
}

// keptTooLong walks an iterator over two entries (one committed, read through goleveldb's
// iterator; one buffered) and checks that what it handed out for an entry is overwritten at
// the next step and at Close, so a caller that keeps a slice too long fails loudly.
func keptTooLong(t *testing.T, next func() bool, current func() [][]byte, closeIt func()) {
	t.Helper()
	if !next() {
		t.Fatal("no first entry")
	}
	first := current()
	if !next() {
		t.Fatal("no second entry")
	}
	second := current()
	for i, b := range first {
		if !stale(b) {
			t.Errorf("slice %d of the first entry is %q after Next, not overwritten", i, b)
		}
	}
	for i, b := range second {
		if stale(b) {
			t.Errorf("slice %d of the current entry is already overwritten", i)
		}
	}
	if next() {
		t.Fatal("a third entry")
	}
	closeIt()
	for i, b := range second {
		if !stale(b) {
			t.Errorf("slice %d of the last entry is %q after Close, not overwritten", i, b)
		}
	}
}

func TestIteratorBytesAreOverwrittenAfterNextAndClose(t *testing.T) {
	db, _ := openDB(t)
	kv, err := db.TimestampedKeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.TimestampedKeyValueStoreType, Headers: true}, 0)
	noErr(t, err)
	win, err := db.WindowStore(pipeline.StoreSpec{Name: "win", Type: pipeline.TimestampedWindowStoreType, Headers: true, WindowSize: 10, Retention: 100}, 0)
	noErr(t, err)
	ses, err := db.SessionStore(pipeline.StoreSpec{Name: "ses", Type: pipeline.SessionStoreType, Retention: 100}, 0)
	noErr(t, err)
	h := pipeline.Headers{{Key: "h", Value: []byte("header value")}}
	put := func(k, v string) {
		noErr(t, kv.PutWithHeaders([]byte(k), []byte(v), 5, h))
		_, err := win.PutWithHeaders([]byte(k), 10, []byte(v), 5, h)
		noErr(t, err)
		_, err = ses.Put([]byte(k), 10, 20, []byte(v), 5)
		noErr(t, err)
	}
	put("key-a", "committed value")
	commit(t, db)
	put("key-b", "buffered value")

	it := kv.All(false)
	keptTooLong(t, it.Next, func() [][]byte {
		hs, err := it.Headers()
		noErr(t, err)
		return [][]byte{it.Key(), it.Value(), hs[0].Value}
	}, it.Close)
	w := win.All(false)
	keptTooLong(t, w.Next, func() [][]byte {
		hs, err := w.Headers()
		noErr(t, err)
		return [][]byte{w.Key(), w.Value(), hs[0].Value}
	}, w.Close)
	s := ses.FetchRange(nil, nil, false)
	keptTooLong(t, s.Next, func() [][]byte { return [][]byte{s.Key(), s.Value()} }, s.Close)
}

// Versioned iterators copy what they hand out: it may be kept.
func TestVersionedIteratorsHandOutBytesThatMayBeKept(t *testing.T) {
	db, _ := openDB(t)
	ver, err := db.VersionedStore(pipeline.StoreSpec{Name: "ver", Type: pipeline.VersionedKeyValueStoreType, HistoryRetention: 100}, 0)
	noErr(t, err)
	_, err = ver.Put([]byte("key-a"), []byte("v1"), 1)
	noErr(t, err)
	commit(t, db)
	_, err = ver.Put([]byte("key-a"), []byte("v2"), 2)
	noErr(t, err)
	_, err = ver.Put([]byte("key-b"), []byte("v3"), 3)
	noErr(t, err)

	var kept []string
	var keys [][]byte
	r := ver.Range(nil, nil, false)
	for r.Next() {
		keys, kept = append(keys, r.Key()), append(kept, string(r.Key())+"="+string(r.Record().Value))
	}
	noErr(t, r.Err())
	r.Close()
	vs := ver.Versions([]byte("key-a"), 0, 10, false)
	var values [][]byte
	for vs.Next() {
		values = append(values, vs.Record().Value)
	}
	noErr(t, vs.Err())
	vs.Close()
	equal(t, kept, []string{"key-a=v2", "key-b=v3"})
	if string(keys[0]) != "key-a" || string(keys[1]) != "key-b" || string(values[0]) != "v1" || string(values[1]) != "v2" {
		t.Fatalf("kept keys %q and versions %q changed after the iterators moved on", keys, values)
	}
}

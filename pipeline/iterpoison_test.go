//go:build iterpoison

package pipeline

import (
	"bytes"
	"testing"
)

// The memory stores' iterators overwrite what they handed out at the next step and at
// Close in iterpoison builds, as package state's do, so engine tests catch a kept slice.
func TestMemoryStoreIteratorBytesAreOverwrittenAfterNextAndClose(t *testing.T) {
	stale := func(b []byte) bool {
		const pattern = "<stale iterator bytes>"
		return len(b) > 0 && bytes.Contains(bytes.Repeat([]byte(pattern), len(b)/len(pattern)+2), b)
	}
	m := NewMemoryStores()
	kv, _ := m.KeyValueStore(StoreSpec{Name: "kv", Type: TimestampedKeyValueStoreType, Headers: true}, 0)
	win, _ := m.WindowStore(StoreSpec{Name: "w", Type: TimestampedWindowStoreType, Headers: true, WindowSize: 10, Retention: 100}, 0)
	ses, _ := m.SessionStore(StoreSpec{Name: "s", Type: SessionStoreType, Retention: 100}, 0)
	h := Headers{{Key: "h", Value: []byte("header value")}}
	for _, k := range []string{"a", "b"} {
		if err := kv.Put([]byte(k), []byte("value "+k), 1, h); err != nil {
			t.Fatal(err)
		}
		if _, err := win.Put([]byte(k), 10, []byte("value "+k), 1, h); err != nil {
			t.Fatal(err)
		}
		if _, err := ses.Put([]byte(k), 10, 20, []byte("value "+k), 1); err != nil {
			t.Fatal(err)
		}
	}
	check := func(name string, it interface {
		Next() bool
		Close()
	}, current func() [][]byte) {
		t.Helper()
		it.Next()
		first := current()
		it.Next()
		second := current()
		it.Close()
		for i, b := range append(first, second...) {
			if !stale(b) {
				t.Errorf("%s: handed-out slice %d reads %q after Next or Close", name, i, b)
			}
		}
	}
	ki := kv.Range(nil, nil, false)
	check("key-value", ki, func() [][]byte {
		hs, _ := ki.Headers()
		return [][]byte{ki.Key(), ki.Value(), hs[0].Value}
	})
	wi := win.FetchRange(nil, nil, 0, 100, false)
	check("window", wi, func() [][]byte {
		hs, _ := wi.Headers()
		return [][]byte{wi.Key(), wi.Value(), hs[0].Value}
	})
	si := ses.FindSessionsRange(nil, nil, 0, 100, false)
	check("session", si, func() [][]byte { return [][]byte{si.Key(), si.Value()} })
}

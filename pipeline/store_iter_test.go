package pipeline

import (
	"fmt"
	"reflect"
	"testing"
)

// The typed store iterators hand out entries a processor may keep after Next: keys and
// values are deserialised (serdes copy) and headers are copied, while the bytes under them
// change at every step (package state; the memory stores in iterpoison builds).
func TestStoreIteratorEntriesMayBeKept(t *testing.T) {
	specs := []StoreSpec{
		{Name: "kv", Type: TimestampedKeyValueStoreType, Headers: true},
		{Name: "w", Type: TimestampedWindowStoreType, Retention: 100, WindowSize: 10, Headers: true},
		{Name: "s", Type: SessionStoreType, Retention: 100},
	}
	d := storeDriver(t, specs, nil, func(*ProcessorContext, Record) error { return nil })
	kv, err := d.Store("kv", 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := d.WindowStore("w", 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.SessionStore("s", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		h := Headers{{Key: "h", Value: []byte("h-" + k)}}
		if err := kv.PutWithHeaders(k, "v-"+k, 1, h); err != nil {
			t.Fatal(err)
		}
		if _, err := w.PutWithHeaders(k, "v-"+k, 10, 1, h); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(k, 10, 20, "v-"+k, 1); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"a=v-a [h=h-a]", "b=v-b [h=h-b]"}
	var kept []func() string
	ki, err := kv.Range(nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for ki.Next() {
		k, v, h := ki.Key(), ki.Value(), ki.Headers()
		kept = append(kept, func() string { return fmt.Sprintf("%v=%v [h=%s]", k, v, h[0].Value) })
	}
	ki.Close()
	wi, err := w.FetchRange(nil, nil, 0, 100, false)
	if err != nil {
		t.Fatal(err)
	}
	for wi.Next() {
		win := wi.Window()
		kept = append(kept, func() string { return fmt.Sprintf("%v=%v [h=%s]", win.Key, win.Value, win.Headers[0].Value) })
	}
	wi.Close()
	si, err := s.FetchRange(nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for si.Next() {
		ses := si.Session()
		kept = append(kept, func() string { return fmt.Sprintf("%v=%v", ses.Key, ses.Value) })
	}
	si.Close()
	var got []string
	for _, f := range kept {
		got = append(got, f())
	}
	if all := append(append(append([]string{}, want...), want...), "a=v-a", "b=v-b"); !reflect.DeepEqual(got, all) {
		t.Fatalf("entries kept past Next read %q, want %q", got, all)
	}
}

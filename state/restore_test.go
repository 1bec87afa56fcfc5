package state

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/stoatflow/stoatflow/pipeline"
)

// dump renders a store partition's committed LevelDB entries.
func dump(t *testing.T, db *DB, store string, partition int32) []string {
	t.Helper()
	id, ok := db.storeID(store)
	if !ok {
		t.Fatalf("no store %q", store)
	}
	prefix := dataPrefix(id, partition)
	it := db.ldb.db.NewIterator(util.BytesPrefix(prefix), nil)
	defer it.Release()
	var out []string
	for it.Next() {
		out = append(out, fmt.Sprintf("%x=%x", it.Key()[len(prefix):], it.Value()))
	}
	noErr(t, it.Error())
	return out
}

// Writing through the stores and restoring their changelog into another database gives
// the same store contents.
func TestRestoreRoundTrip(t *testing.T) {
	src, _ := openDB(t)
	specs := []pipeline.StoreSpec{
		{Name: "kv", Type: pipeline.KeyValueStoreType, Logged: true},
		{Name: "ts", Type: pipeline.TimestampedKeyValueStoreType, Logged: true},
		{Name: "hd", Type: pipeline.TimestampedKeyValueStoreType, Headers: true, Logged: true},
		{Name: "win", Type: pipeline.TimestampedWindowStoreType, WindowSize: 10, Retention: 1000, Logged: true},
		{Name: "dup", Type: pipeline.TimestampedWindowStoreType, WindowSize: 10, Retention: 1000, RetainDuplicates: true, Logged: true},
		{Name: "ses", Type: pipeline.SessionStoreType, Retention: 1000, Logged: true},
		{Name: "ver", Type: pipeline.VersionedKeyValueStoreType, HistoryRetention: 1000, Logged: true},
	}
	kv, err := src.KeyValueStore(specs[0], 1)
	noErr(t, err)
	ts, err := src.TimestampedKeyValueStore(specs[1], 1)
	noErr(t, err)
	hd, err := src.TimestampedKeyValueStore(specs[2], 1)
	noErr(t, err)
	win, err := src.WindowStore(specs[3], 1)
	noErr(t, err)
	dup, err := src.WindowStore(specs[4], 1)
	noErr(t, err)
	ses, err := src.SessionStore(specs[5], 1)
	noErr(t, err)
	ver, err := src.VersionedStore(specs[6], 1)
	noErr(t, err)
	for i := range 20 {
		k := []byte{byte(i % 7), 0x00, byte(i % 3)}
		v := []byte(fmt.Sprintf("v%d", i))
		ts64 := int64(i * 10)
		noErr(t, kv.Put(k, v, ts64))
		noErr(t, ts.Put(k, v, ts64))
		noErr(t, hd.PutWithHeaders(k, v, ts64, pipeline.Headers{{Key: "i", Value: v}, {Key: "n"}}))
		_, err = win.Put(k, ts64/20*20, v, ts64)
		noErr(t, err)
		_, err = dup.Put(k, ts64/20*20, v, ts64)
		noErr(t, err)
		_, err = ses.Put(k, ts64, ts64+5, v, ts64)
		noErr(t, err)
		_, err = ver.Put(k, v, ts64)
		noErr(t, err)
		if i%5 == 4 {
			noErr(t, kv.Delete(k, ts64))
			noErr(t, ts.Delete(k, ts64))
			noErr(t, hd.Delete(k, ts64))
			_, err = win.Put(k, ts64/20*20, nil, ts64)
			noErr(t, err)
			noErr(t, ses.Remove(k, ts64, ts64+5, ts64))
			_, _, err = ver.Delete(k, ts64+1)
			noErr(t, err)
		}
	}
	records := append([]ChangelogRecord(nil), src.Changelog()...)
	commit(t, src)

	dst, _ := openDB(t)
	for _, spec := range specs {
		var mine []ChangelogRecord
		for _, r := range records {
			if r.Store == spec.Name {
				mine = append(mine, r)
			}
		}
		if len(mine) == 0 {
			t.Fatalf("store %s logged nothing", spec.Name)
		}
		noErr(t, dst.Restore(spec, 1, mine, int64(len(mine))))
		equal(t, dump(t, dst, spec.Name, 1), dump(t, src, spec.Name, 1))
		off, ok, err := dst.ChangelogOffset(spec.Name, 1)
		if err != nil || !ok || off != int64(len(mine)) {
			t.Fatalf("%s: offset %d %v %v", spec.Name, off, ok, err)
		}
	}
	// the restored duplicate store continues its seqnums
	d, err := dst.WindowStore(specs[4], 1)
	noErr(t, err)
	if d.p.seq != dup.p.seq {
		t.Fatalf("restored seqnum %d, want %d", d.p.seq, dup.p.seq)
	}
	if w, _ := dst.WindowStore(specs[3], 1); w.p.streamTime.Load() != win.p.streamTime.Load() {
		t.Fatal("restored stream time differs")
	}
}

func TestRestoreErrors(t *testing.T) {
	db, _ := openDB(t)
	spec := pipeline.StoreSpec{Name: "w", Type: pipeline.TimestampedWindowStoreType, WindowSize: 1, Retention: 10}
	if err := db.Restore(spec, 0, []ChangelogRecord{{Key: []byte("short"), Value: []byte("v")}}, 0); err == nil {
		t.Fatal("short window key accepted")
	}
	ses := pipeline.StoreSpec{Name: "s", Type: pipeline.SessionStoreType, Retention: 10}
	if err := db.Restore(ses, 0, []ChangelogRecord{{Key: bytes.Repeat([]byte{1}, 15)}}, 0); err == nil {
		t.Fatal("short session key accepted")
	}
	kvSpec := pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}
	if err := db.Restore(kvSpec, 0, []ChangelogRecord{{Value: []byte("v")}}, 0); err == nil {
		t.Fatal("null key accepted")
	}
	s, err := db.KeyValueStore(kvSpec, 0)
	noErr(t, err)
	noErr(t, s.Put([]byte("k"), []byte("v"), 0))
	if err := db.Restore(kvSpec, 0, nil, 0); err == nil {
		t.Fatal("restore over uncommitted writes accepted")
	}
}

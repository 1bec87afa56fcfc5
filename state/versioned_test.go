package state

import (
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

func TestVersionedStore(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.VersionedStore(pipeline.StoreSpec{Name: "v", Type: pipeline.VersionedKeyValueStoreType, HistoryRetention: 100, Logged: true}, 0)
	noErr(t, err)
	put := func(value string, ts, wantValidTo int64) {
		t.Helper()
		var v []byte
		if value != "" {
			v = []byte(value)
		}
		got, err := s.Put([]byte("k"), v, ts)
		if err != nil || got != wantValidTo {
			t.Fatalf("put %q@%d = %d, %v; want %d", value, ts, got, err, wantValidTo)
		}
	}
	put("v10", 10, pipeline.ValidToUndefined)
	put("v20", 20, pipeline.ValidToUndefined)
	commit(t, db)
	put("v5", 5, 10)
	put("v15", 15, 20)

	get := func(view VersionedView, asOf int64, want string, wantTs, wantValidTo int64) {
		t.Helper()
		rec, ok, err := view.GetAsOf([]byte("k"), asOf)
		if err != nil {
			t.Fatal(err)
		}
		if want == "" {
			if ok {
				t.Fatalf("asOf %d: got %+v, want none", asOf, rec)
			}
			return
		}
		if !ok || string(rec.Value) != want || rec.Timestamp != wantTs || rec.ValidTo != wantValidTo {
			t.Fatalf("asOf %d: got %+v %v, want %s@%d..%d", asOf, rec, ok, want, wantTs, wantValidTo)
		}
	}
	get(s.VersionedView, 4, "", 0, 0)
	get(s.VersionedView, 5, "v5", 5, 10)
	get(s.VersionedView, 12, "v10", 10, 15)
	get(s.VersionedView, 15, "v15", 15, 20)
	get(s.VersionedView, 1000, "v20", 20, pipeline.ValidToUndefined)
	get(s.View(ReadCommitted), 12, "v10", 10, 20)
	get(s.View(ReadCommitted), 5, "", 0, 0)

	rec, ok, err := s.Get([]byte("k"))
	if err != nil || !ok || string(rec.Value) != "v20" || rec.ValidTo != pipeline.ValidToUndefined {
		t.Fatalf("latest: %+v %v %v", rec, ok, err)
	}
	// delete returns the version it ends, and hides the key from then on
	rec, ok, err = s.Delete([]byte("k"), 30)
	if err != nil || !ok || string(rec.Value) != "v20" || rec.Timestamp != 20 {
		t.Fatalf("delete: %+v %v %v", rec, ok, err)
	}
	if _, ok, _ := s.Get([]byte("k")); ok {
		t.Fatal("deleted key still has a latest version")
	}
	get(s.VersionedView, 25, "v20", 20, 30)
	get(s.VersionedView, 30, "", 0, 0)

	// stream time 30, history retention 100: a write at 200 moves the cutoff to 100
	put("v200", 200, pipeline.ValidToUndefined)
	put("late", 99, pipeline.NotPut)
	if _, ok, _ := s.Delete([]byte("k"), 50); ok {
		t.Fatal("delete below the history retention returned a record")
	}
	get(s.VersionedView, 99, "", 0, 0)  // below retention, not the latest
	get(s.VersionedView, 100, "", 0, 0) // the tombstone at 30 answers
	get(s.VersionedView, 250, "v200", 200, pipeline.ValidToUndefined)

	// below the retention the latest version still answers
	_, err = s.Put([]byte("only"), []byte("o"), 150)
	noErr(t, err)
	rec, ok, err = s.GetAsOf([]byte("only"), 160)
	if err != nil || !ok || string(rec.Value) != "o" {
		t.Fatalf("latest below retention: %+v %v %v", rec, ok, err)
	}
	if len(db.Changelog()) == 0 || db.Changelog()[0].Timestamp != 5 {
		t.Fatalf("changelog %+v", db.Changelog())
	}
	commit(t, db)
	// the sweep dropped every version superseded at or before 100 and the tombstone at 30
	if n := countRaw(t, db, s.p); n != 2 {
		t.Fatalf("%d versions in LevelDB after the sweep, want 2", n)
	}
	get(s.View(ReadCommitted), 250, "v200", 200, pipeline.ValidToUndefined)
}

package state

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syndtr/goleveldb/leveldb"
)

func TestSpecValidation(t *testing.T) {
	db, _ := openDB(t)
	for _, spec := range []StoreSpec{
		{Type: KeyValue},
		{Name: "x", Type: StoreType(42)},
		{Name: "x", Type: KeyValue, Headers: true},
		{Name: "x", Type: Session, Retention: 10, Headers: true},
		{Name: "x", Type: KeyValue, RetainDuplicates: true},
		{Name: "x", Type: Window, WindowSize: 0, Retention: 10},
		{Name: "x", Type: Window, WindowSize: 20, Retention: 10},
		{Name: "x", Type: Session},
		{Name: "x", Type: Versioned, HistoryRetention: -1},
	} {
		if _, err := db.open(spec, 0); err == nil {
			t.Errorf("spec %+v accepted", spec)
		}
	}
	if _, err := db.KeyValueStore(StoreSpec{Name: "x", Type: KeyValue}, -1); err == nil {
		t.Error("negative partition accepted")
	}
	if _, err := db.WindowStore(StoreSpec{Name: "x", Type: KeyValue}, 0); err == nil {
		t.Error("a key-value spec opened as a window store")
	}
}

func TestSpecPersistsAcrossReopen(t *testing.T) {
	db, _ := openDB(t)
	spec := StoreSpec{Name: "w", Type: Window, WindowSize: 10, Retention: 100}
	w, err := db.WindowStore(spec, 0)
	noErr(t, err)
	_, err = w.Put([]byte("k"), 0, []byte("v"), 0)
	noErr(t, err)
	commit(t, db)
	other := spec
	other.Retention = 200
	if _, err := db.WindowStore(other, 1); err == nil {
		t.Fatal("a second spec for an open store accepted")
	}
	db = reopen(t, db)
	if got, ok := db.Spec("w"); !ok || got != spec {
		t.Fatalf("catalogue spec %+v %v", got, ok)
	}
	changed := spec
	changed.Type = Session
	changed.WindowSize = 0
	_, err = db.SessionStore(changed, 0)
	if err == nil || !strings.Contains(err.Error(), "was created as Window") {
		t.Fatalf("type change: %v", err)
	}
	dups := spec
	dups.RetainDuplicates = true
	if _, err := db.WindowStore(dups, 0); err == nil {
		t.Fatal("duplicates change accepted")
	}
	// retention may change between runs; the data stays
	w, err = db.WindowStore(other, 0)
	noErr(t, err)
	equal(t, windows(t, w.All(false)), []string{"k[0,10)=v@0"})
	db = reopen(t, db)
	if got, _ := db.Spec("w"); got.Retention != 200 {
		t.Fatalf("retention not updated: %+v", got)
	}
	// a new store gets a fresh prefix after the reopen
	kv, err := db.KeyValueStore(StoreSpec{Name: "kv", Type: KeyValue}, 0)
	noErr(t, err)
	equal(t, kvs(t, kv.All(false)), nil)
	w, err = db.WindowStore(other, 0)
	noErr(t, err)
	if kv.p.id == w.p.id {
		t.Fatal("two stores share an id")
	}
}

func TestCorruptManifest(t *testing.T) {
	db, dir := openDB(t)
	s, err := db.KeyValueStore(StoreSpec{Name: "kv", Type: KeyValue}, 0)
	noErr(t, err)
	noErr(t, s.Put([]byte("k"), []byte("v")))
	commit(t, db)
	noErr(t, db.Close())
	manifests, err := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
	noErr(t, err)
	if len(manifests) == 0 {
		t.Fatal("no manifest")
	}
	for _, m := range manifests {
		noErr(t, os.WriteFile(m, []byte(strings.Repeat("garbage!", 200)), 0o644))
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open of a corrupt database: %v", err)
	}
}

func TestCorruptCatalogue(t *testing.T) {
	db, dir := openDB(t)
	_, err := db.KeyValueStore(StoreSpec{Name: "kv", Type: KeyValue}, 0)
	noErr(t, err)
	noErr(t, db.ldb.db.Put(catalogKey("kv"), []byte("{not json"), nil))
	noErr(t, db.Close())
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open with a bad catalogue: %v", err)
	}
}

func TestForeignDatabase(t *testing.T) {
	dir := t.TempDir()
	ldb, err := leveldb.OpenFile(dir, nil)
	noErr(t, err)
	noErr(t, ldb.Put([]byte("someone"), []byte("else"), nil))
	noErr(t, ldb.Close())
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open of a foreign database: %v", err)
	}
}

func TestSyncOption(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{Sync: true})
	noErr(t, err)
	defer db.Close()
	if !db.wo.Sync {
		t.Fatal("Sync not passed to LevelDB writes")
	}
}

// A malformed stored value is an error naming the store, never a panic.
func TestMalformedStoredValues(t *testing.T) {
	db, _ := openDB(t)
	ts, err := db.TimestampedKeyValueStore(StoreSpec{Name: "ts", Type: TimestampedKeyValue, Headers: true}, 0)
	noErr(t, err)
	noErr(t, db.ldb.db.Put(append(dataPrefix(ts.p.id, 0), 'k'), []byte{0x0a, 0x02}, nil))
	if _, _, err := ts.Get([]byte("k")); err == nil || !strings.Contains(err.Error(), `"ts"`) {
		t.Fatalf("get: %v", err)
	}
	if _, _, _, err := ts.GetWithHeaders([]byte("k")); err == nil {
		t.Fatal("getWithHeaders of a malformed value")
	}
	it := ts.All(false)
	if it.Next() || it.Err() == nil {
		t.Fatal("iterator over a malformed value")
	}
	it.Close()

	w, err := db.WindowStore(windowSpec(), 0)
	noErr(t, err)
	noErr(t, db.ldb.db.Put(append(dataPrefix(w.p.id, 0), 'x'), []byte("v"), nil))
	wit := w.All(false)
	if wit.Next() || wit.Err() == nil {
		t.Fatal("window iterator over a malformed key")
	}
	wit.Close()
	s, err := db.SessionStore(StoreSpec{Name: "s", Type: Session, Retention: 10}, 0)
	noErr(t, err)
	noErr(t, db.ldb.db.Put(append(dataPrefix(s.p.id, 0), 'x'), []byte("v"), nil))
	sit := s.FetchRange(nil, nil, false)
	if sit.Next() || sit.Err() == nil {
		t.Fatal("session iterator over a malformed key")
	}
	sit.Close()
}

func TestViewLevels(t *testing.T) {
	db, _ := openDB(t)
	w, err := db.WindowStore(windowSpec(), 0)
	noErr(t, err)
	s, err := db.SessionStore(StoreSpec{Name: "s", Type: Session, Retention: 10}, 0)
	noErr(t, err)
	v, err := db.VersionedStore(StoreSpec{Name: "v", Type: Versioned}, 0)
	noErr(t, err)
	if w.View(ReadCommitted).Level() != ReadCommitted || s.View(ReadCommitted).Level() != ReadCommitted || v.View(ReadCommitted).Level() != ReadCommitted {
		t.Fatal("view levels")
	}
	_, err = w.Put([]byte("k"), 0, []byte("v"), 0)
	noErr(t, err)
	_, err = s.Put([]byte("k"), 0, 0, []byte("v"))
	noErr(t, err)
	_, err = v.Put([]byte("k"), []byte("v"), 0)
	noErr(t, err)
	if w.ApproximateNumUncommittedBytes() == 0 || s.ApproximateNumUncommittedBytes() == 0 || v.ApproximateNumUncommittedBytes() == 0 {
		t.Fatal("uncommitted bytes not counted")
	}
	if got := StoreType(99).String(); got != "StoreType(99)" {
		t.Fatal(got)
	}
}

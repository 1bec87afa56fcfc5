package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Every way to open a store checks its spec with the engine's rules.
func TestSpecValidation(t *testing.T) {
	db, _ := openDB(t)
	opens := map[string]func(pipeline.StoreSpec) error{
		"KeyValueStore": func(s pipeline.StoreSpec) error { _, err := db.KeyValueStore(s, 0); return err },
		"TimestampedKeyValueStore": func(s pipeline.StoreSpec) error {
			_, err := db.TimestampedKeyValueStore(s, 0)
			return err
		},
		"WindowStore":    func(s pipeline.StoreSpec) error { _, err := db.WindowStore(s, 0); return err },
		"SessionStore":   func(s pipeline.StoreSpec) error { _, err := db.SessionStore(s, 0); return err },
		"VersionedStore": func(s pipeline.StoreSpec) error { _, err := db.VersionedStore(s, 0); return err },
		"Restore":        func(s pipeline.StoreSpec) error { return db.Restore(s, 0, nil, 0) },
	}
	for _, spec := range []pipeline.StoreSpec{
		{Type: pipeline.KeyValueStoreType},
		{Name: "x", Type: pipeline.StoreType(42)},
		{Name: "x", Type: pipeline.KeyValueStoreType, Headers: true},
		{Name: "x", Type: pipeline.SessionStoreType, Retention: 10, Headers: true},
		{Name: "x", Type: pipeline.WindowStoreType, WindowSize: 1, Retention: 10, Headers: true},
		{Name: "x", Type: pipeline.KeyValueStoreType, RetainDuplicates: true},
		{Name: "x", Type: pipeline.TimestampedWindowStoreType, WindowSize: 0, Retention: 10},
		{Name: "x", Type: pipeline.TimestampedWindowStoreType, WindowSize: 20, Retention: 10},
		{Name: "x", Type: pipeline.SessionStoreType},
		{Name: "x", Type: pipeline.VersionedKeyValueStoreType, HistoryRetention: -1},
	} {
		for name, open := range opens {
			if err := open(spec); err == nil || !strings.HasPrefix(err.Error(), "state: store ") {
				t.Errorf("%s of spec %+v: %v", name, spec, err)
			}
		}
	}
	if _, err := db.KeyValueStore(pipeline.StoreSpec{Name: "x", Type: pipeline.KeyValueStoreType}, -1); err == nil {
		t.Error("negative partition accepted")
	}
	if _, err := db.WindowStore(pipeline.StoreSpec{Name: "x", Type: pipeline.KeyValueStoreType}, 0); err == nil {
		t.Error("a key-value spec opened as a window store")
	}
}

// Plain and timestamped window stores keep the same format, in one run and across runs,
// and the catalogue entry keeps the format earlier versions wrote.
func TestWindowStoreTypesShareAFormat(t *testing.T) {
	db, _ := openDB(t)
	plain := pipeline.StoreSpec{Name: "w", Type: pipeline.WindowStoreType, WindowSize: 10, Retention: 100, Logged: true}
	w, err := db.WindowStore(plain, 0)
	noErr(t, err)
	_, err = w.Put([]byte("k"), 0, []byte("v"), 5)
	noErr(t, err)
	commit(t, db)
	timestamped := plain
	timestamped.Type = pipeline.TimestampedWindowStoreType
	_, err = db.WindowStore(timestamped, 1)
	noErr(t, err)
	entry, err := db.ldb.db.Get(catalogKey("w"), nil)
	noErr(t, err)
	const want = `{"id":1,"spec":{"Name":"w","Type":"Window","Headers":false,"Logged":true,"Retention":100,"WindowSize":10,"RetainDuplicates":false,"HistoryRetention":0}}`
	if string(entry) != want {
		t.Errorf("catalogue entry %s\nwant            %s", entry, want)
	}
	db = reopen(t, db)
	w, err = db.WindowStore(timestamped, 0)
	noErr(t, err)
	equal(t, windows(t, w.All(false)), []string{"k[0,10)=v@5"})
}

func TestSpecPersistsAcrossReopen(t *testing.T) {
	db, _ := openDB(t)
	spec := pipeline.StoreSpec{Name: "w", Type: pipeline.TimestampedWindowStoreType, WindowSize: 10, Retention: 100}
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
	if got, ok := db.catalog["w"]; !ok || got.Spec != mustCatalogSpec(t, spec) {
		t.Fatalf("catalogue spec %+v %v", got, ok)
	}
	changed := spec
	changed.Type = pipeline.SessionStoreType
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
	if got := db.catalog["w"].Spec; got.Retention != 200 {
		t.Fatalf("retention not updated: %+v", got)
	}
	// a new store gets a fresh prefix after the reopen
	kv, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}, 0)
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
	s, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)
	noErr(t, s.Put([]byte("k"), []byte("v"), 0))
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
	_, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}, 0)
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
	ts, err := db.TimestampedKeyValueStore(pipeline.StoreSpec{Name: "ts", Type: pipeline.TimestampedKeyValueStoreType, Headers: true}, 0)
	noErr(t, err)
	rawPut(t, db, append(dataPrefix(ts.p.id, 0), 'k'), []byte{0x0a, 0x02})
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
	rawPut(t, db, append(dataPrefix(w.p.id, 0), 'x'), []byte("v"))
	wit := w.All(false)
	if wit.Next() || wit.Err() == nil {
		t.Fatal("window iterator over a malformed key")
	}
	wit.Close()
	s, err := db.SessionStore(pipeline.StoreSpec{Name: "s", Type: pipeline.SessionStoreType, Retention: 10}, 0)
	noErr(t, err)
	rawPut(t, db, append(dataPrefix(s.p.id, 0), 'x'), []byte("v"))
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
	s, err := db.SessionStore(pipeline.StoreSpec{Name: "s", Type: pipeline.SessionStoreType, Retention: 10}, 0)
	noErr(t, err)
	v, err := db.VersionedStore(pipeline.StoreSpec{Name: "v", Type: pipeline.VersionedKeyValueStoreType}, 0)
	noErr(t, err)
	if w.View(ReadCommitted).Level() != ReadCommitted || s.View(ReadCommitted).Level() != ReadCommitted || v.View(ReadCommitted).Level() != ReadCommitted {
		t.Fatal("view levels")
	}
	_, err = w.Put([]byte("k"), 0, []byte("v"), 0)
	noErr(t, err)
	_, err = s.Put([]byte("k"), 0, 0, []byte("v"), 0)
	noErr(t, err)
	_, err = v.Put([]byte("k"), []byte("v"), 0)
	noErr(t, err)
	if w.ApproximateNumUncommittedBytes() == 0 || s.ApproximateNumUncommittedBytes() == 0 || v.ApproximateNumUncommittedBytes() == 0 {
		t.Fatal("uncommitted bytes not counted")
	}
	if got := storeKind(99).String(); got != "storeKind(99)" {
		t.Fatal(got)
	}
}

// rawPut writes a data key behind the stores' back, as damage would, telling the key
// filter as writeData does.
func rawPut(t *testing.T, db *DB, k, v []byte) {
	t.Helper()
	var b leveldb.Batch
	b.Put(k, v)
	db.keys.addBatch(&b)
	noErr(t, db.ldb.db.Write(&b, nil))
}

// Tables are written uncompressed: point reads of cold keys read a block from its table,
// and decoding snappy there (and encoding every block again at each compaction) cost more
// than it saved. Values that snappy would shrink twentyfold take their full size on disk.
func TestTablesAreUncompressed(t *testing.T) {
	db, dir := openDB(t)
	s, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)
	value := make([]byte, 1000)
	const n = 1000
	for i := range n {
		noErr(t, s.Put(fmt.Appendf(nil, "key-%04d", i), value, 0))
	}
	commit(t, db)
	noErr(t, db.ldb.db.CompactRange(util.Range{}))
	tables, err := filepath.Glob(filepath.Join(dir, "*.ldb"))
	noErr(t, err)
	var size int64
	for _, name := range tables {
		fi, err := os.Stat(name)
		if errors.Is(err, os.ErrNotExist) {
			continue // a table the compaction replaced, removed in the background meanwhile
		}
		noErr(t, err)
		size += fi.Size()
	}
	if size < n*int64(len(value)) {
		t.Fatalf("%d tables take %d bytes, less than the %d bytes of their values: compressed", len(tables), size, n*len(value))
	}
}

// Compactions are by size only: with keys spread over a million words nearly every read of
// a committed key goes past a newer table, and goleveldb's compactions by such reads then
// compacted each table flushed from the memtable alone, rewriting all of level 1 each time.
func TestLevelDBCompactsBySizeOnly(t *testing.T) {
	if o := levelDBOptions(); !o.DisableSeeksCompaction {
		t.Fatal("LevelDB compacts tables that reads went past")
	}
}

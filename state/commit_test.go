package state

import (
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

func TestIsolationLevels(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)
	rc := s.View(ReadCommitted)
	if rc.Level() != ReadCommitted || s.Level() != ReadUncommitted {
		t.Fatal("levels")
	}
	noErr(t, s.Put([]byte("k"), []byte("v"), 0))
	if v, _ := rc.Get([]byte("k")); v != nil {
		t.Fatalf("READ_COMMITTED saw an uncommitted write: %q", v)
	}
	if v, _ := s.View(ReadUncommitted).Get([]byte("k")); string(v) != "v" {
		t.Fatalf("READ_UNCOMMITTED = %q", v)
	}
	commit(t, db)
	if v, _ := rc.Get([]byte("k")); string(v) != "v" {
		t.Fatalf("READ_COMMITTED after commit = %q", v)
	}
	for _, c := range []struct {
		in   string
		want IsolationLevel
	}{{"READ_COMMITTED", ReadCommitted}, {"READ_UNCOMMITTED", ReadUncommitted}} {
		got, err := ParseIsolationLevel(c.in)
		if err != nil || got != c.want || got.String() != c.in {
			t.Fatalf("%s: %v %v", c.in, got, err)
		}
	}
	if _, err := ParseIsolationLevel("read_committed"); err == nil {
		t.Fatal("lower-case level accepted")
	}
}

func TestAbortDropsEpoch(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType, Logged: true}, 0)
	noErr(t, err)
	w, err := db.WindowStore(windowSpec(), 0)
	noErr(t, err)
	noErr(t, s.Put([]byte("kept"), []byte("1"), 0))
	commit(t, db)
	noErr(t, s.Put([]byte("dropped"), []byte("2"), 0))
	noErr(t, s.Delete([]byte("kept"), 0))
	_, err = w.Put([]byte("k"), 500, []byte("v"), 500)
	noErr(t, err)
	noErr(t, db.PutMeta("kv", 0, "m", []byte("x")))
	if db.UncommittedBytes() == 0 || len(db.Changelog()) != 3 {
		t.Fatalf("epoch not recorded: %d bytes, %d records", db.UncommittedBytes(), len(db.Changelog()))
	}
	db.Abort()
	equal(t, kvs(t, s.All(false)), []string{"6b657074=1"})
	if db.UncommittedBytes() != 0 || s.ApproximateNumUncommittedBytes() != 0 || len(db.Changelog()) != 0 {
		t.Fatal("abort kept bytes or records")
	}
	if m, _ := db.Meta("kv", 0, "m"); m != nil {
		t.Fatalf("aborted metadata %q", m)
	}
	// the stream time moved by the aborted put is rolled back too
	if st := w.p.streamTime.Load(); st != w.p.committedStreamTime.Load() {
		t.Fatalf("stream time %d after abort", st)
	}
	commit(t, db)
	equal(t, kvs(t, s.View(ReadCommitted).All(false)), []string{"6b657074=1"})
}

// Data and changelog offsets commit together: after a reopen both are there, and an
// uncommitted epoch leaves neither.
func TestCommitAtomicity(t *testing.T) {
	db, _ := openDB(t)
	spec := pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType, Logged: true}
	s, err := db.KeyValueStore(spec, 2)
	noErr(t, err)
	if _, ok, err := db.ChangelogOffset("kv", 2); ok || err != nil {
		t.Fatalf("offset before any commit: %v %v", ok, err)
	}
	noErr(t, s.Put([]byte("a"), []byte("1"), 0))
	noErr(t, db.PutMeta("kv", 2, "emit", []byte("5")))
	noErr(t, db.Commit(map[ChangelogPartition]int64{{Store: "kv", Partition: 2}: 41}))
	noErr(t, s.Put([]byte("b"), []byte("2"), 0))
	db = reopen(t, db) // closes with "b" uncommitted

	s, err = db.KeyValueStore(spec, 2)
	noErr(t, err)
	equal(t, kvs(t, s.All(false)), []string{"61=1"})
	off, ok, err := db.ChangelogOffset("kv", 2)
	if err != nil || !ok || off != 41 {
		t.Fatalf("offset %d %v %v", off, ok, err)
	}
	if m, err := db.Meta("kv", 2, "emit"); err != nil || string(m) != "5" {
		t.Fatalf("meta %q %v", m, err)
	}

	// an offset for an unknown store fails the commit and applies nothing
	noErr(t, s.Put([]byte("c"), []byte("3"), 0))
	if err := db.Commit(map[ChangelogPartition]int64{{Store: "nope", Partition: 0}: 1}); err == nil {
		t.Fatal("commit with an unknown store's offset succeeded")
	}
	equal(t, kvs(t, s.View(ReadCommitted).All(false)), []string{"61=1"})
	equal(t, kvs(t, s.All(false)), []string{"61=1", "63=3"})
	noErr(t, db.Commit(map[ChangelogPartition]int64{{Store: "kv", Partition: 2}: 42}))
	equal(t, kvs(t, s.View(ReadCommitted).All(false)), []string{"61=1", "63=3"})
	if off, _, _ := db.ChangelogOffset("kv", 2); off != 42 {
		t.Fatalf("offset %d", off)
	}
	if _, err := db.Meta("kv", 9, "x"); err == nil {
		t.Fatal("metadata of an unopened partition")
	}
	if err := db.PutMeta("kv", 2, "x", nil); err == nil {
		t.Fatal("nil metadata accepted")
	}
}

func TestUncommittedBytes(t *testing.T) {
	db, _ := openDB(t)
	a, err := db.KeyValueStore(pipeline.StoreSpec{Name: "a", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)
	b, err := db.TimestampedKeyValueStore(pipeline.StoreSpec{Name: "b", Type: pipeline.TimestampedKeyValueStoreType}, 0)
	noErr(t, err)
	b1, err := db.TimestampedKeyValueStore(pipeline.StoreSpec{Name: "b", Type: pipeline.TimestampedKeyValueStoreType}, 1)
	noErr(t, err)
	noErr(t, a.Put([]byte("key"), []byte("value"), 0)) // 3 + 1 + 5
	noErr(t, a.Put([]byte("key"), []byte("value"), 0)) // overwrites count: the buffer keeps them
	noErr(t, b.Put([]byte("k"), []byte("v"), 1))       // 1 + 1 + 8 + 1
	noErr(t, b1.Delete([]byte("k"), 0))                // 1 + 1
	if got := a.ApproximateNumUncommittedBytes(); got != 18 {
		t.Fatalf("a: %d", got)
	}
	if got := db.UncommittedBytes(); got != 31 {
		t.Fatalf("total: %d", got)
	}
	by := db.UncommittedBytesByStore()
	if by["a"] != 18 || by["b"] != 13 {
		t.Fatalf("by store: %v", by)
	}
	commit(t, db)
	if db.UncommittedBytes() != 0 || b.ApproximateNumUncommittedBytes() != 0 {
		t.Fatal("bytes after commit")
	}
}

func TestWipe(t *testing.T) {
	db, _ := openDB(t)
	spec := pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType, Logged: true}
	s, err := db.KeyValueStore(spec, 0)
	noErr(t, err)
	other, err := db.KeyValueStore(spec, 1)
	noErr(t, err)
	noErr(t, s.Put([]byte("a"), []byte("1"), 0))
	noErr(t, other.Put([]byte("b"), []byte("2"), 0))
	noErr(t, db.PutMeta("kv", 0, "m", []byte("x")))
	noErr(t, db.Commit(map[ChangelogPartition]int64{{Store: "kv"}: 7, {Store: "kv", Partition: 1}: 8}))
	noErr(t, s.Put([]byte("c"), []byte("3"), 0))
	noErr(t, other.Put([]byte("d"), []byte("4"), 0))
	noErr(t, db.Wipe("kv", 0))
	equal(t, kvs(t, s.All(false)), nil)
	if _, ok, _ := db.ChangelogOffset("kv", 0); ok {
		t.Fatal("offset survived the wipe")
	}
	if m, _ := db.Meta("kv", 0, "m"); m != nil {
		t.Fatal("metadata survived the wipe")
	}
	if cl := db.Changelog(); len(cl) != 1 || cl[0].Partition != 1 {
		t.Fatalf("changelog after wipe %+v", cl)
	}
	commit(t, db)
	equal(t, kvs(t, other.View(ReadCommitted).All(false)), []string{"62=2", "64=4"})
	if off, ok, _ := db.ChangelogOffset("kv", 1); !ok || off != 8 {
		t.Fatal("the other partition's offset was touched")
	}
	noErr(t, db.Wipe("never-opened", 0))
}

package state

import (
	"encoding/binary"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

// The key filter answers reads of keys LevelDB never held, so it must hold every key
// there is: those committed and restored since Open, past the first layer's capacity. A
// database reopened with tables does not use it.
func TestKeyFilterHoldsEveryKey(t *testing.T) {
	dir := t.TempDir()
	spec := pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}
	key := func(i int) []byte { return binary.BigEndian.AppendUint32([]byte("k"), uint32(i)) }
	const n = 2*filterFirstKeys + 1000
	db, err := Open(dir, Options{})
	noErr(t, err)
	if !db.keys.ready {
		t.Fatal("the filter of a new database is not ready")
	}
	s, err := db.KeyValueStore(spec, 0)
	noErr(t, err)
	for i := range n {
		noErr(t, s.Put(key(i), []byte("v"), 0))
		if i%5000 == 0 {
			commit(t, db)
		}
	}
	commit(t, db)
	noErr(t, db.Restore(spec, 0, []ChangelogRecord{{Store: "kv", Key: []byte("restored"), Value: []byte("r")}}, 7))
	check := func(s *KeyValueStore) {
		t.Helper()
		for i := range n {
			if v, err := s.View(ReadCommitted).Get(key(i)); err != nil || v == nil {
				t.Fatalf("key %d: %q %v", i, v, err)
			}
		}
		if v, err := s.Get([]byte("restored")); err != nil || string(v) != "r" {
			t.Fatalf("restored key: %q %v", v, err)
		}
	}
	check(s)
	misses := 0
	for i := n; i < 2*n; i++ {
		if !db.keys.mayHold(append(dataPrefix(s.p.id, 0), key(i)...)) {
			misses++
		}
	}
	if misses < n*9/10 {
		t.Fatalf("the filter turned away only %d of %d absent keys", misses, n)
	}
	noErr(t, db.Close())

	db, err = Open(dir, Options{})
	noErr(t, err)
	defer db.Close()
	if db.keys.ready {
		t.Fatal("the filter of a database with tables is ready")
	}
	s, err = db.KeyValueStore(spec, 0)
	noErr(t, err)
	check(s)
}

package state

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/pipeline"
)

func waitFilterReady(t *testing.T, db *DB) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !db.keys.ready.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the key filter is not ready")
		}
		time.Sleep(time.Millisecond)
	}
}

// The key filter answers reads of keys LevelDB never held, so it must hold every key
// there is: those committed before Open (the scan), those committed and restored since,
// past the first layer's capacity.
func TestKeyFilterHoldsEveryKey(t *testing.T) {
	dir := t.TempDir()
	spec := pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}
	key := func(i int) []byte { return binary.BigEndian.AppendUint32([]byte("k"), uint32(i)) }
	const before = filterFirstKeys + 1000
	db, err := Open(dir, Options{})
	noErr(t, err)
	s, err := db.KeyValueStore(spec, 0)
	noErr(t, err)
	for i := range before {
		noErr(t, s.Put(key(i), []byte("v"), 0))
	}
	commit(t, db)
	noErr(t, db.Close())

	db, err = Open(dir, Options{})
	noErr(t, err)
	defer db.Close()
	waitFilterReady(t, db)
	s, err = db.KeyValueStore(spec, 0)
	noErr(t, err)
	for i := before; i < 2*before; i++ {
		noErr(t, s.Put(key(i), []byte("w"), 0))
	}
	commit(t, db)
	noErr(t, db.Restore(spec, 0, []ChangelogRecord{{Store: "kv", Key: []byte("restored"), Value: []byte("r")}}, 7))
	for i := range 2 * before {
		if v, err := s.View(ReadCommitted).Get(key(i)); err != nil || v == nil {
			t.Fatalf("key %d: %q %v", i, v, err)
		}
	}
	if v, err := s.Get([]byte("restored")); err != nil || string(v) != "r" {
		t.Fatalf("restored key: %q %v", v, err)
	}
	misses := 0
	for i := 2 * before; i < 3*before; i++ {
		if !db.keys.mayHold(append(dataPrefix(1, 0), key(i)...)) {
			misses++
		}
	}
	if misses < before*9/10 {
		t.Fatalf("the filter turned away only %d of %d absent keys", misses, before)
	}
}

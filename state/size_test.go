package state

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

// A store's size is what its committed data takes on disk, apart from the other stores'.
func TestApproximateSizeOfEachStore(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, testOptions)
	noErr(t, err)
	big, err := db.KeyValueStore(pipeline.StoreSpec{Name: "big", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)
	small, err := db.KeyValueStore(pipeline.StoreSpec{Name: "small", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		value := make([]byte, 1000)
		for j := range value {
			value[j] = byte(rng.Uint32())
		}
		noErr(t, big.Put(fmt.Appendf(nil, "key-%05d", i), value, 0))
	}
	noErr(t, small.Put([]byte("one"), []byte("1"), 0))
	commit(t, db)
	noErr(t, db.Close())
	// Reopening writes the journal into a table, which is what the size counts.
	db, err = Open(dir, testOptions)
	noErr(t, err)
	defer db.Close()
	b, err := db.ApproximateSize("big")
	noErr(t, err)
	s, err := db.ApproximateSize("small")
	noErr(t, err)
	if b < 1_900_000 || s >= b/20 {
		t.Fatalf("big %d bytes (2000 random values of 1000 B), small %d bytes", b, s)
	}
	if n, err := db.ApproximateSize("none"); err != nil || n != 0 {
		t.Fatalf("an unknown store: %d, %v", n, err)
	}
}

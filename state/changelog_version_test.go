package state

import (
	"fmt"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

// A store with a changelog version (Kafka Streams' suppression buffer marks its layout so)
// sends it as the header "v" of every changelog record but tombstones; a restore takes the
// values as they are.
func TestChangelogVersionHeader(t *testing.T) {
	db, _ := openDB(t)
	spec := pipeline.StoreSpec{Name: "buffer", Type: pipeline.KeyValueStoreType, Logged: true, ChangelogVersion: 3}
	s, err := db.KeyValueStore(spec, 0)
	noErr(t, err)
	noErr(t, s.Put([]byte("k"), []byte("v"), 5))
	noErr(t, s.Delete([]byte("k"), 6))
	var got []string
	for _, r := range db.Changelog() {
		got = append(got, fmt.Sprintf("%s=%q %v", r.Key, r.Value, r.Headers))
	}
	equal(t, got, []string{`k="v" [{v [3]}]`, `k="" []`})
	commit(t, db)
	noErr(t, db.Restore(spec, 1, []ChangelogRecord{{Key: []byte("r"), Value: []byte("x"), Timestamp: 7,
		Headers: pipeline.Headers{{Key: "v", Value: []byte{3}}}}}, 0))
	r, err := db.KeyValueStore(spec, 1)
	noErr(t, err)
	equal(t, kvs(t, r.All(false)), []string{"72=x"})
}

package state

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

// The buffer orders keys only once an iteration asks: writes before and after that point,
// new keys and overwrites, must all come out of later iterations in key order, and an
// iterator already open sees them as it reaches them.
func TestBufferOrderAcrossFirstIteration(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)
	key := func(i int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(i)) }
	var want []string
	for i := 0; i < 2000; i += 2 { // enough keys to grow the hash table several times
		noErr(t, s.Put(key(i), []byte("a"), 0))
	}
	it := s.All(false)
	defer it.Close()
	if !it.Next() || string(it.Key()) != string(key(0)) {
		t.Fatalf("first key %x", it.Key())
	}
	for i := 1; i < 2000; i += 2 { // new keys, after the order was built
		noErr(t, s.Put(key(i), []byte("b"), 0))
	}
	noErr(t, s.Put(key(4), []byte("c"), 0)) // an overwrite ahead of the open iterator
	noErr(t, s.Put(key(6), nil, 0))
	for i := range 2000 {
		switch {
		case i == 4:
			want = append(want, fmt.Sprintf("%x=c", key(i)))
		case i == 6:
		case i%2 == 0:
			want = append(want, fmt.Sprintf("%x=a", key(i)))
		default:
			want = append(want, fmt.Sprintf("%x=b", key(i)))
		}
	}
	got := []string{fmt.Sprintf("%x=%s", it.Key(), it.Value())}
	for it.Next() {
		got = append(got, fmt.Sprintf("%x=%s", it.Key(), it.Value()))
	}
	noErr(t, it.Err())
	if !slices.Equal(got, want) {
		t.Fatalf("open iterator saw %d entries, want %d:\n%v", len(got), len(want), got)
	}
	if got := kvs(t, s.All(false)); !slices.Equal(got, want) {
		t.Fatalf("new iterator saw %v", got)
	}
	slices.Reverse(want)
	if got := kvs(t, s.All(true)); !slices.Equal(got, want) {
		t.Fatalf("reverse iterator saw %v", got)
	}
	for i := range 2000 {
		v, err := s.Get(key(i))
		noErr(t, err)
		if (i == 6) != (v == nil) {
			t.Fatalf("get %x = %q", key(i), v)
		}
	}
}

// The producer may still hold an epoch's changelog records when the next epochs write
// theirs: their bytes must not change.
func TestChangelogRecordsOutliveTheirEpoch(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType, Logged: true}, 0)
	noErr(t, err)
	noErr(t, s.Put([]byte("first"), []byte("value"), 1))
	kept := db.TakeChangelog()[0]
	commit(t, db)
	for i := range changelogChunk / 8 {
		noErr(t, s.Put([]byte("key"), binary.BigEndian.AppendUint64(nil, uint64(i)), 2))
		if i%1000 == 0 {
			commit(t, db)
		}
	}
	if string(kept.Key) != "first" || string(kept.Value) != "value" {
		t.Fatalf("an earlier epoch's record now reads %q=%q", kept.Key, kept.Value)
	}
}

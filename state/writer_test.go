package state

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Two goroutines write the epoch at once, each through its own Writer into its own
// partitions of one logged store and one window store (run with -race). Each writer's
// changelog keeps its partitions' records in write order, and one Commit applies both.
func TestWritersWriteOneEpochAtOnce(t *testing.T) {
	db, _ := openDB(t)
	kvSpec := pipeline.StoreSpec{Name: "kv", Type: pipeline.TimestampedKeyValueStoreType, Logged: true}
	writers := []*Writer{db.NewWriter(), db.NewWriter()}
	const n = 2000
	var wg sync.WaitGroup
	for i, w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := w.TimestampedKeyValueStore(kvSpec, int32(i))
			if err != nil {
				t.Error(err)
				return
			}
			win, err := w.WindowStore(windowSpec(), int32(i))
			if err != nil {
				t.Error(err)
				return
			}
			for j := range n {
				if err := s.Put([]byte(fmt.Sprintf("k%d", j%10)), []byte(fmt.Sprint(j)), int64(j)); err != nil {
					t.Error(err)
					return
				}
				if _, err := win.Put([]byte("w"), int64(j), []byte("v"), int64(j)); err != nil {
					t.Error(err)
					return
				}
				if j%100 == 0 {
					w.TakeChangelog()
				}
			}
			if err := w.PutMeta("kv", int32(i), "m", []byte{byte(i)}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i, w := range writers {
		last := map[string]string{}
		for _, r := range w.changelog {
			if r.Partition != int32(i) {
				t.Fatalf("writer %d logged a record of partition %d", i, r.Partition)
			}
			if r.Store == "kv" {
				last[string(r.Key)] = string(r.Value)
			}
		}
		if last["k9"] != fmt.Sprint(n-1) {
			t.Fatalf("writer %d: k9's last changelog record is %q, want %d", i, last["k9"], n-1)
		}
	}
	commit(t, db)
	for i := range writers {
		s, err := db.TimestampedKeyValueStore(kvSpec, int32(i))
		noErr(t, err)
		v, _, err := s.View(ReadCommitted).Get([]byte("k9"))
		noErr(t, err)
		if string(v) != fmt.Sprint(n-1) {
			t.Fatalf("partition %d: k9 = %q after the commit, want %d", i, v, n-1)
		}
		m, err := db.Meta("kv", int32(i), "m")
		noErr(t, err)
		if len(m) != 1 || m[0] != byte(i) {
			t.Fatalf("partition %d: metadata %x", i, m)
		}
	}
	if len(db.Changelog()) != 0 || db.UncommittedBytes() != 0 {
		t.Fatalf("the commit left %d changelog records and %d bytes", len(db.Changelog()), db.UncommittedBytes())
	}
}

// A writer released during an epoch (a worker that went away) still has its writes in the
// epoch: Commit applies them, Abort drops them, and after either it is gone.
func TestReleasedWriterStaysInTheEpoch(t *testing.T) {
	for _, abort := range []bool{false, true} {
		db, _ := openDB(t)
		spec := pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType, Logged: true}
		w := db.NewWriter()
		s, err := w.KeyValueStore(spec, 3)
		noErr(t, err)
		noErr(t, s.Put([]byte("a"), []byte("1"), 0))
		w.Release()
		if got := len(db.Changelog()); got != 1 {
			t.Fatalf("abort=%t: the released writer's record is gone from the epoch (%d records)", abort, got)
		}
		if abort {
			db.Abort()
		} else {
			commit(t, db)
		}
		v, err := s.View(ReadCommitted).Get([]byte("a"))
		noErr(t, err)
		if (v != nil) == abort {
			t.Fatalf("abort=%t: committed value %q", abort, v)
		}
		if len(db.epochWriters()) != 1 {
			t.Fatalf("abort=%t: %d writers left, want the main one", abort, len(db.epochWriters()))
		}
	}
}

package state

import (
	"encoding/binary"
	"sync"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Readers on other goroutines (interactive queries) run while the processing goroutine
// writes, commits (in the background too) and aborts. Run with -race. Every epoch writes the same counter under
// keys "a" and "b": a READ_COMMITTED iteration sees them equal, whatever it interleaves
// with.
func TestConcurrentReadersAndWriter(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.TimestampedKeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.TimestampedKeyValueStoreType, Logged: true}, 0)
	noErr(t, err)
	w, err := db.WindowStore(windowSpec(), 0)
	noErr(t, err)
	const epochs = 200
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	reader := func(level IsolationLevel) {
		defer wg.Done()
		view, wview := s.View(level), w.View(level)
		for {
			select {
			case <-done:
				return
			default:
			}
			it := view.All(false)
			var vals [][]byte
			for it.Next() {
				vals = append(vals, append([]byte(nil), it.Value()...))
			}
			if err := it.Err(); err != nil {
				errs <- err
			}
			it.Close()
			if level == ReadCommitted && len(vals) == 2 && string(vals[0]) != string(vals[1]) {
				t.Errorf("READ_COMMITTED saw a torn epoch: %x vs %x", vals[0], vals[1])
			}
			if _, _, err := view.Get([]byte("a")); err != nil {
				errs <- err
			}
			wit := wview.Fetch([]byte("a"), 0, 1<<40, true)
			for wit.Next() {
				_ = wit.Value()
			}
			wit.Close()
			_ = view.ApproximateNumUncommittedBytes()
			_ = db.UncommittedBytes()
			_ = db.UncommittedBytesByStore()
		}
	}
	for _, level := range []IsolationLevel{ReadCommitted, ReadCommitted, ReadUncommitted, ReadUncommitted} {
		wg.Add(1)
		go reader(level)
	}
	lastCommitted := -1
	for i := range epochs {
		v := binary.BigEndian.AppendUint64(nil, uint64(i))
		noErr(t, s.Put([]byte("a"), v, int64(i)))
		noErr(t, s.Put([]byte("b"), v, int64(i)))
		_, err := w.Put([]byte("a"), int64(i), v, int64(i))
		noErr(t, err)
		if i%7 == 3 {
			db.Abort()
			continue
		}
		offsets := map[ChangelogPartition]int64{{Store: "kv"}: int64(i)}
		if i%2 == 0 {
			noErr(t, db.Commit(offsets))
		} else {
			_, err := db.CommitInBackground(offsetsOf(offsets))
			noErr(t, err)
		}
		lastCommitted = i
	}
	db.Abort() // waits for the last background commit
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	v, ts, err := s.View(ReadCommitted).Get([]byte("a"))
	if err != nil || binary.BigEndian.Uint64(v) != uint64(lastCommitted) || ts != int64(lastCommitted) {
		t.Fatalf("last committed value %x@%d %v", v, ts, err)
	}
}

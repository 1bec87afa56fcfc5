package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

// isCached reports whether store key k of partition p is in the read cache.
func isCached(p *partition, k []byte) bool {
	p.db.cache.mu.Lock()
	defer p.db.cache.mu.Unlock()
	_, ok := p.db.cache.index[string(p.diskKey(k))]
	return ok
}

// dropFromLevelDB deletes k behind the cache's back, so a read that still finds it was
// served by the cache.
func dropFromLevelDB(t *testing.T, p *partition, k []byte) {
	t.Helper()
	noErr(t, p.db.ldb.db.Delete(p.diskKey(k), nil))
}

func kvGet(t *testing.T, v KeyValueView, k string) string {
	t.Helper()
	val, err := v.Get([]byte(k))
	noErr(t, err)
	if val == nil {
		return "<nil>"
	}
	return string(val)
}

func TestCacheServesCommittedPointReads(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)
	noErr(t, s.Put([]byte("a"), []byte("0"), 0))
	noErr(t, s.Put([]byte("empty"), []byte{}, 0))
	commit(t, db)
	kvGet(t, s.KeyValueView, "a")
	kvGet(t, s.KeyValueView, "empty")
	noErr(t, s.Put([]byte("a"), []byte("1"), 0))
	commit(t, db)
	if !isCached(s.p, []byte("a")) || db.CachedBytes() == 0 {
		t.Fatal("a committed value read before is not cached")
	}
	dropFromLevelDB(t, s.p, []byte("a"))
	for _, v := range []KeyValueView{s.KeyValueView, s.View(ReadCommitted)} {
		if got := kvGet(t, v, "a"); got != "1" {
			t.Fatalf("%s: a = %s, want the cached 1", v.Level(), got)
		}
		if got, err := v.Get([]byte("empty")); err != nil || got == nil || len(got) != 0 {
			t.Fatalf("%s: a present empty value read %v %v", v.Level(), got, err)
		}
	}
	// iterators read LevelDB, not the cache
	equal(t, kvs(t, s.All(false)), []string{"656d707479="})
}

func TestCacheFillsOnMiss(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)
	noErr(t, s.Put([]byte("a"), []byte("1"), 0))
	commit(t, db)
	db = reopen(t, db)
	s, err = db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)
	if isCached(s.p, []byte("a")) {
		t.Fatal("cached before any read")
	}
	if got := kvGet(t, s.View(ReadCommitted), "a"); got != "1" {
		t.Fatalf("a = %s", got)
	}
	if !isCached(s.p, []byte("a")) {
		t.Fatal("a read from LevelDB was not cached")
	}
	if got := kvGet(t, s.View(ReadCommitted), "absent"); got != "<nil>" || isCached(s.p, []byte("absent")) {
		t.Fatalf("absent key: %s", got)
	}
}

func TestCacheEpochBufferWins(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)
	noErr(t, s.Put([]byte("a"), []byte("1"), 0))
	noErr(t, s.Put([]byte("b"), []byte("1"), 0))
	commit(t, db)
	noErr(t, s.Put([]byte("a"), []byte("2"), 0))
	noErr(t, s.Delete([]byte("b"), 0))
	if got := kvGet(t, s.KeyValueView, "a"); got != "2" {
		t.Fatalf("READ_UNCOMMITTED a = %s, want the buffered 2", got)
	}
	if got := kvGet(t, s.KeyValueView, "b"); got != "<nil>" {
		t.Fatalf("READ_UNCOMMITTED b = %s, want the buffered delete", got)
	}
	rc := s.View(ReadCommitted)
	if got := kvGet(t, rc, "a") + kvGet(t, rc, "b"); got != "11" {
		t.Fatalf("READ_COMMITTED a, b = %s, want 11", got)
	}
}

func TestCacheHoldsNoAbortedValue(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)
	noErr(t, s.Put([]byte("a"), []byte("1"), 0))
	commit(t, db)
	noErr(t, s.Put([]byte("a"), []byte("aborted"), 0))
	noErr(t, s.Put([]byte("new"), []byte("aborted"), 0))
	kvGet(t, s.KeyValueView, "a")
	kvGet(t, s.KeyValueView, "new")
	db.Abort()
	for _, v := range []KeyValueView{s.KeyValueView, s.View(ReadCommitted)} {
		if got := kvGet(t, v, "a") + " " + kvGet(t, v, "new"); got != "1 <nil>" {
			t.Fatalf("%s after abort: %s", v.Level(), got)
		}
	}
	if isCached(s.p, []byte("new")) {
		t.Fatal("an aborted key is cached")
	}
}

func TestCacheFollowsCommits(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)
	ts, err := db.TimestampedKeyValueStore(pipeline.StoreSpec{Name: "ts", Type: pipeline.TimestampedKeyValueStoreType}, 0)
	noErr(t, err)
	noErr(t, s.Put([]byte("a"), []byte("1"), 0))
	noErr(t, s.Put([]byte("b"), []byte("1"), 0))
	noErr(t, ts.Put([]byte("t"), []byte("1"), 5))
	commit(t, db)
	held := kvGet(t, s.KeyValueView, "a")
	heldSlice, err := s.Get([]byte("a"))
	noErr(t, err)

	noErr(t, s.Put([]byte("a"), []byte("2"), 0))
	noErr(t, s.Delete([]byte("b"), 0))
	noErr(t, ts.Put([]byte("t"), nil, 6)) // a tombstone
	commit(t, db)
	rc := s.View(ReadCommitted)
	if got := kvGet(t, rc, "a") + " " + kvGet(t, rc, "b"); got != "2 <nil>" {
		t.Fatalf("after the second commit a, b = %s, want 2 <nil>", got)
	}
	if v, _, err := ts.View(ReadCommitted).Get([]byte("t")); v != nil || err != nil {
		t.Fatalf("tombstoned t = %q %v", v, err)
	}
	if isCached(s.p, []byte("b")) || isCached(ts.p, []byte("t")) {
		t.Fatal("deleted keys are still cached")
	}
	if held != "1" || string(heldSlice) != "1" {
		t.Fatalf("a value read before the commit changed under its reader: %q", heldSlice)
	}
}

func TestCacheDropsExpiredWindows(t *testing.T) {
	db, _ := openDB(t)
	w, err := db.WindowStore(windowSpec(), 0)
	noErr(t, err)
	_, err = w.Put([]byte("a"), 0, []byte("1"), 0)
	noErr(t, err)
	commit(t, db)
	if v, _, err := w.Get([]byte("a"), 0); err != nil || string(v) != "1" {
		t.Fatalf("window = %q %v", v, err)
	}
	if !isCached(w.p, appendWindowKey(nil, []byte("a"), 0, 0)) {
		t.Fatal("a committed window is not cached")
	}
	_, err = w.Put([]byte("b"), 10*windowSpec().Retention, []byte("1"), 0)
	noErr(t, err)
	commit(t, db) // the sweep deletes window a
	if isCached(w.p, appendWindowKey(nil, []byte("a"), 0, 0)) {
		t.Fatal("a window the sweep deleted is still cached")
	}
}

func TestCacheRestoreInvalidates(t *testing.T) {
	db, _ := openDB(t)
	spec := pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType, Logged: true}
	s, err := db.KeyValueStore(spec, 0)
	noErr(t, err)
	noErr(t, s.Put([]byte("a"), []byte("1"), 0))
	noErr(t, s.Put([]byte("b"), []byte("1"), 0))
	commit(t, db)
	noErr(t, db.Restore(spec, 0, []ChangelogRecord{
		{Store: "kv", Key: []byte("a"), Value: []byte("9")},
		{Store: "kv", Key: []byte("b")},
	}, 3))
	for _, v := range []KeyValueView{s.KeyValueView, s.View(ReadCommitted)} {
		if got := kvGet(t, v, "a") + " " + kvGet(t, v, "b"); got != "9 <nil>" {
			t.Fatalf("%s after restore: %s, want 9 <nil>", v.Level(), got)
		}
	}
}

func TestCacheWipeInvalidates(t *testing.T) {
	db, _ := openDB(t)
	spec := pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}
	s, err := db.KeyValueStore(spec, 0)
	noErr(t, err)
	other, err := db.KeyValueStore(spec, 1)
	noErr(t, err)
	noErr(t, s.Put([]byte("a"), []byte("1"), 0))
	noErr(t, other.Put([]byte("a"), []byte("2"), 0))
	commit(t, db)
	kvGet(t, s.KeyValueView, "a")
	kvGet(t, other.KeyValueView, "a")
	noErr(t, db.Wipe("kv", 0))
	if got := kvGet(t, s.View(ReadCommitted), "a"); got != "<nil>" {
		t.Fatalf("a after wipe = %s", got)
	}
	if !isCached(other.p, []byte("a")) {
		t.Fatal("the wipe dropped another partition's cached value")
	}
}

// A read that missed and went to LevelDB before a write must not add what it found after
// the write: the cache would then serve a value older than committed state.
func TestCacheRejectsFillsAcrossWrites(t *testing.T) {
	db, _ := openDB(t)
	spec := pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}
	s, err := db.KeyValueStore(spec, 0)
	noErr(t, err)
	c := db.cache
	for _, write := range []struct {
		name string
		run  func()
	}{
		{"commit", func() { noErr(t, s.Put([]byte("a"), []byte("new"), 0)); commit(t, db) }},
		{"wipe", func() { noErr(t, db.Wipe("kv", 0)) }},
		{"restore", func() {
			noErr(t, db.Restore(spec, 0, []ChangelogRecord{{Key: []byte("a"), Value: []byte("new")}}, 1))
		}},
	} {
		noErr(t, s.Put([]byte("a"), []byte("old"), 0))
		commit(t, db)
		dk := s.p.diskKey([]byte("a"))
		c.mu.Lock()
		c.remove(dk)
		c.mu.Unlock()
		_, _, token := c.get(dk) // a reader misses and reads "old" from LevelDB...
		write.run()              // ...the processing goroutine writes...
		c.fill(dk, []byte("old"), token)
		if got := kvGet(t, s.View(ReadCommitted), "a"); got == "old" {
			t.Fatalf("%s: a stale read was cached", write.name)
		}
		c.beginWrite() // and a miss during a write must not fill either
		_, _, token = c.get(dk)
		c.fill(dk, []byte("old"), token)
		c.endWrite(nil, false, false)
		if got := kvGet(t, s.View(ReadCommitted), "a"); got == "old" {
			t.Fatalf("%s: a read during a write was cached", write.name)
		}
	}
}

func TestCacheEviction(t *testing.T) {
	db, err := Open(t.TempDir(), Options{CacheBytes: 20 * (cacheEntryOverhead + 20)})
	noErr(t, err)
	defer db.Close()
	s, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)
	hot := []byte("hot")
	noErr(t, s.Put(hot, []byte("h"), 0))
	commit(t, db)
	kvGet(t, s.KeyValueView, "hot")
	for i := range 200 {
		k := fmt.Appendf(nil, "k%03d", i)
		noErr(t, s.Put(k, k, 0))
		commit(t, db)
		kvGet(t, s.KeyValueView, string(k))
		if !isCached(s.p, hot) {
			t.Fatalf("insert %d evicted the key read between every insert", i)
		}
		if v, _ := s.Get(hot); string(v) != "h" {
			t.Fatalf("hot = %q", v)
		}
		if db.CachedBytes() > 20*(cacheEntryOverhead+20) {
			t.Fatalf("the cache holds %d bytes, over its limit", db.CachedBytes())
		}
	}
	if isCached(s.p, []byte("k000")) {
		t.Fatal("the oldest unread key was not evicted")
	}
	for i := range 200 {
		k := fmt.Appendf(nil, "k%03d", i)
		if v, _ := s.Get(k); !bytes.Equal(v, k) {
			t.Fatalf("%s = %q after eviction", k, v)
		}
	}
	big := bytes.Repeat([]byte("x"), 3000)
	noErr(t, s.Put(hot, big, 0))
	commit(t, db)
	if isCached(s.p, hot) {
		t.Fatal("a value larger than the cache was cached")
	}
	if v, _ := s.Get(hot); !bytes.Equal(v, big) {
		t.Fatal("the large value reads wrong")
	}
}

// A commit updates the keys the cache holds and leaves the others out: a batch of new keys
// larger than the cache evicts nothing that reads keep hot.
func TestCacheCommitUpdatesCachedKeysOnly(t *testing.T) {
	db, err := Open(t.TempDir(), Options{CacheBytes: 20 * (cacheEntryOverhead + 20)})
	noErr(t, err)
	defer db.Close()
	s, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)
	noErr(t, s.Put([]byte("hot"), []byte("h1"), 0))
	commit(t, db)
	kvGet(t, s.KeyValueView, "hot")
	before := db.CachedBytes()
	for i := range 100 {
		noErr(t, s.Put(fmt.Appendf(nil, "new%03d", i), []byte("v"), 0))
	}
	noErr(t, s.Put([]byte("hot"), []byte("h2"), 0))
	commit(t, db)
	if isCached(s.p, []byte("new000")) || db.CachedBytes() != before {
		t.Fatalf("the commit cached its new keys: %d bytes cached, was %d", db.CachedBytes(), before)
	}
	dropFromLevelDB(t, s.p, []byte("hot"))
	if got := kvGet(t, s.View(ReadCommitted), "hot"); got != "h2" {
		t.Fatalf("hot = %s, want the committed h2 from the cache", got)
	}
	if got := kvGet(t, s.View(ReadCommitted), "new007"); got != "v" || !isCached(s.p, []byte("new007")) {
		t.Fatalf("new007 = %s (cached %v), want v, cached by the read", got, isCached(s.p, []byte("new007")))
	}
}

func TestCacheOptions(t *testing.T) {
	if _, err := Open(t.TempDir(), Options{CacheBytes: -1}); err == nil {
		t.Fatal("a negative cache size was accepted")
	}
	db, err := Open(t.TempDir(), Options{})
	noErr(t, err)
	defer db.Close()
	s, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)
	noErr(t, s.Put([]byte("a"), []byte("1"), 0))
	commit(t, db)
	if db.cache != nil || s.p.cache != nil || db.CachedBytes() != 0 {
		t.Fatal("CacheBytes 0 did not disable the cache")
	}
	if got := kvGet(t, s.KeyValueView, "a"); got != "1" {
		t.Fatalf("a = %s without a cache", got)
	}
}

// Stores read by scanning leave the cache to stores read by key.
func TestCacheSkipsScannedStores(t *testing.T) {
	db, _ := openDB(t)
	v, err := db.VersionedStore(pipeline.StoreSpec{Name: "v", Type: pipeline.VersionedKeyValueStoreType, HistoryRetention: 100}, 0)
	noErr(t, err)
	_, err = v.Put([]byte("a"), []byte("1"), 5)
	noErr(t, err)
	dup := windowSpec()
	dup.Name, dup.RetainDuplicates = "dup", true
	w, err := db.WindowStore(dup, 0)
	noErr(t, err)
	_, err = w.Put([]byte("a"), 0, []byte("1"), 0)
	noErr(t, err)
	commit(t, db)
	if n := db.CachedBytes(); n != 0 {
		t.Fatalf("versioned and duplicate-window writes took %d cache bytes", n)
	}
}

// The bytes the cache reports are the heap it holds, within the allocator's rounding.
func TestCacheMemoryAccounting(t *testing.T) {
	const n = 50000
	c := newValueCache(1 << 40)
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = binary.BigEndian.AppendUint64(dataPrefix(1, 0), uint64(i))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c.mu.Lock()
	for _, k := range keys {
		c.set(k, make([]byte, 16))
	}
	c.mu.Unlock()
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	ratio := heap / float64(c.size())
	t.Logf("%d entries: heap %.0f B, accounted %d B (%.2f)", n, heap, c.size(), ratio)
	if ratio < 0.7 || ratio > 1.3 {
		t.Fatalf("the cache accounts %d bytes for %.0f bytes of heap", c.size(), heap)
	}
	runtime.KeepAlive(c)
	runtime.KeepAlive(keys)
}

// READ_COMMITTED point reads on other goroutines see only committed values, and never an
// older value after a newer one, while the processing goroutine writes, commits, aborts,
// restores and wipes. Run with -race.
func TestCacheConcurrentCommittedReads(t *testing.T) {
	db, err := Open(t.TempDir(), Options{CacheBytes: 8 * (cacheEntryOverhead + 30)})
	noErr(t, err)
	defer db.Close()
	spec := pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}
	s, err := db.KeyValueStore(spec, 0)
	noErr(t, err)
	const keys = 16
	key := func(i int) []byte { return []byte{byte('a' + i)} }
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			view := s.View(ReadCommitted)
			var last [keys]uint64
			for n := 0; ; n++ {
				select {
				case <-done:
					return
				default:
				}
				i := n % keys
				v, err := view.Get(key(i))
				if err != nil {
					t.Error(err)
					return
				}
				if v == nil {
					last[i] = 0 // a wipe
					continue
				}
				if v[0] == 'u' {
					t.Errorf("READ_COMMITTED saw the uncommitted %q", v)
					return
				}
				got := binary.BigEndian.Uint64(v[1:])
				if got < last[i] {
					t.Errorf("key %s went back from %d to %d", key(i), last[i], got)
					return
				}
				last[i] = got
			}
		}()
	}
	for epoch := uint64(1); epoch <= 300; epoch++ {
		for i := range keys {
			noErr(t, s.Put(key(i), binary.BigEndian.AppendUint64([]byte("u"), epoch), 0))
		}
		switch {
		case epoch%50 == 0:
			db.Abort()
			noErr(t, db.Wipe("kv", 0))
		case epoch%7 == 0:
			db.Abort()
		case epoch%11 == 0:
			db.Abort()
			var recs []ChangelogRecord
			for i := range keys {
				recs = append(recs, ChangelogRecord{Key: key(i), Value: binary.BigEndian.AppendUint64([]byte("c"), epoch)})
			}
			noErr(t, db.Restore(spec, 0, recs, int64(epoch)))
		default:
			for i := range keys {
				noErr(t, s.Put(key(i), binary.BigEndian.AppendUint64([]byte("c"), epoch), 0))
			}
			commit(t, db)
		}
	}
	close(done)
	wg.Wait()
}

package state

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/stoatflow/stoatflow/pipeline"
)

func windowSpec() pipeline.StoreSpec {
	return pipeline.StoreSpec{Name: "w", Type: pipeline.TimestampedWindowStoreType, WindowSize: 10, Retention: 100, Logged: true}
}

func TestWindowFetch(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.WindowStore(windowSpec(), 0)
	noErr(t, err)
	put := func(key string, start int64, value string) {
		t.Helper()
		ok, err := s.Put([]byte(key), start, []byte(value), start+1)
		if err != nil || !ok {
			t.Fatalf("put %s@%d: %v %v", key, start, ok, err)
		}
	}
	put("a", 10, "a10")
	put("a", 0, "a0")
	put("ab", 0, "ab0")
	put("a\x00", 5, "a\x005")
	commit(t, db)
	put("a", 20, "a20")
	put("b", 10, "b10")
	put("a", 10, "a10'")

	equal(t, windows(t, s.Fetch([]byte("a"), 0, 20, false)), []string{"a[0,10)=a0@1", "a[10,20)=a10'@11", "a[20,30)=a20@21"})
	equal(t, windows(t, s.Fetch([]byte("a"), 5, 15, true)), []string{"a[10,20)=a10'@11"})
	equal(t, windows(t, s.Fetch([]byte("a"), 0, 20, true)), []string{"a[20,30)=a20@21", "a[10,20)=a10'@11", "a[0,10)=a0@1"})
	equal(t, windows(t, s.Fetch([]byte("a"), 20, 10, false)), nil)
	equal(t, windows(t, s.View(ReadCommitted).Fetch([]byte("a"), 0, 20, false)), []string{"a[0,10)=a0@1", "a[10,20)=a10@11"})
	equal(t, windows(t, s.FetchRange([]byte("a"), []byte("ab"), 0, 10, false)),
		[]string{"a[0,10)=a0@1", "a[10,20)=a10'@11", "a\x00[5,15)=a\x005@6", "ab[0,10)=ab0@1"})
	equal(t, windows(t, s.FetchRange([]byte("a\x00"), nil, 5, 10, true)),
		[]string{"b[10,20)=b10@11", "a\x00[5,15)=a\x005@6"})
	equal(t, windows(t, s.FetchAll(10, 10, false)), []string{"a[10,20)=a10'@11", "b[10,20)=b10@11"})
	if got := len(windows(t, s.All(false))); got != 6 {
		t.Fatalf("all: %d windows", got)
	}
	v, ts, err := s.Get([]byte("a"), 10)
	if err != nil || string(v) != "a10'" || ts != 11 {
		t.Fatalf("get: %q %d %v", v, ts, err)
	}
	if v, _, _ := s.Get([]byte("a"), 11); v != nil {
		t.Fatalf("get of a missing window: %q", v)
	}
	// a nil value deletes the window
	ok, err := s.Put([]byte("a"), 0, nil, 0)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	equal(t, windows(t, s.Fetch([]byte("a"), 0, 0, false)), nil)

	cl := db.Changelog()
	last := cl[len(cl)-1]
	if !bytes.Equal(last.Key, []byte{'a', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}) || last.Value != nil {
		t.Fatalf("delete changelog record %+v", last)
	}
	first := cl[0]
	if !bytes.Equal(first.Key, []byte{'a', 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 0}) || string(first.Value) != "a20" || first.Timestamp != 21 {
		t.Fatalf("window changelog record %+v", first)
	}
}

func TestWindowEndOverflow(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.WindowStore(windowSpec(), 0)
	noErr(t, err)
	_, err = s.Put([]byte("k"), math.MaxInt64-1, []byte("v"), 0)
	noErr(t, err)
	it := s.All(false)
	defer it.Close()
	if !it.Next() || it.End() != math.MaxInt64 {
		t.Fatalf("end = %d", it.End())
	}
}

func TestWindowRetention(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.WindowStore(windowSpec(), 0)
	noErr(t, err)
	for _, start := range []int64{0, 50, 100} {
		_, err := s.Put([]byte("k"), start, []byte("v"), start)
		noErr(t, err)
	}
	commit(t, db)
	// stream time 150: windows starting before 51 expire
	ok, err := s.Put([]byte("k"), 150, []byte("v"), 150)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	ok, err = s.Put([]byte("k"), 40, []byte("late"), 40)
	if err != nil || ok {
		t.Fatalf("late put accepted: %v %v", ok, err)
	}
	equal(t, windows(t, s.Fetch([]byte("k"), 0, 200, false)), []string{"k[100,110)=v@100", "k[150,160)=v@150"})
	if v, _, _ := s.Get([]byte("k"), 50); v != nil {
		t.Fatal("expired window visible through Get")
	}
	// READ_COMMITTED still judges by the committed stream time (100)
	equal(t, windows(t, s.View(ReadCommitted).Fetch([]byte("k"), 0, 200, false)), []string{"k[50,60)=v@50", "k[100,110)=v@100"})
	commit(t, db)
	if n := countRaw(t, db, s.p); n != 2 {
		t.Fatalf("%d windows left in LevelDB after the sweep, want 2", n)
	}
}

func countRaw(t *testing.T, db *DB, p *partition) int {
	t.Helper()
	it := db.ldb.db.NewIterator(util.BytesPrefix(p.prefix), nil)
	defer it.Release()
	n := 0
	for it.Next() {
		n++
	}
	noErr(t, it.Error())
	return n
}

func TestWindowRetainDuplicates(t *testing.T) {
	db, _ := openDB(t)
	spec := windowSpec()
	spec.RetainDuplicates = true
	s, err := db.WindowStore(spec, 0)
	noErr(t, err)
	for _, v := range []string{"x", "y"} {
		_, err := s.Put([]byte("k"), 5, []byte(v), 5)
		noErr(t, err)
	}
	ok, err := s.Put([]byte("k"), 5, nil, 5)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	equal(t, windows(t, s.Fetch([]byte("k"), 5, 5, false)), []string{"k[5,15)=x@5", "k[5,15)=y@5"})
	if v, _, _ := s.Get([]byte("k"), 5); string(v) != "x" {
		t.Fatalf("get of a duplicate window = %q", v)
	}
	cl := db.Changelog()
	if len(cl) != 2 || !bytes.Equal(cl[0].Key[len(cl[0].Key)-4:], []byte{0, 0, 0, 1}) || !bytes.Equal(cl[1].Key[len(cl[1].Key)-4:], []byte{0, 0, 0, 2}) {
		t.Fatalf("seqnums in changelog: %+v", cl)
	}
	commit(t, db)
	// the seqnum survives a reopen, so new duplicates never overwrite old ones
	db2 := reopen(t, db)
	s2, err := db2.WindowStore(spec, 0)
	noErr(t, err)
	_, err = s2.Put([]byte("k"), 5, []byte("z"), 5)
	noErr(t, err)
	equal(t, windows(t, s2.Fetch([]byte("k"), 5, 5, false)), []string{"k[5,15)=x@5", "k[5,15)=y@5", "k[5,15)=z@5"})
}

func TestHeadersAwareWindow(t *testing.T) {
	db, _ := openDB(t)
	spec := windowSpec()
	spec.Headers = true
	s, err := db.WindowStore(spec, 0)
	noErr(t, err)
	_, err = s.PutWithHeaders([]byte("k"), 0, []byte("v"), 3, pipeline.Headers{{Key: "h", Value: nil}})
	noErr(t, err)
	it := s.Fetch([]byte("k"), 0, 0, false)
	defer it.Close()
	if !it.Next() || string(it.Value()) != "v" || it.Timestamp() != 3 {
		t.Fatal("window with headers not found")
	}
	h, err := it.Headers()
	if err != nil || len(h) != 1 || h[0].Key != "h" || h[0].Value != nil {
		t.Fatalf("headers %+v %v", h, err)
	}
	if cl := db.Changelog(); len(cl) != 1 || len(cl[0].Headers) != 1 || string(cl[0].Value) != "v" {
		t.Fatalf("changelog %+v", cl)
	}
}

// TestWindowGetMatchesFetch checks that the point read sees exactly what a one-window
// Fetch sees first: buffered and committed writes at both isolation levels, deletes,
// windows expired by retention, headers, and the first of duplicates, before and after the
// buffered writes are committed (with the read cache, after READ_COMMITTED reads filled it).
func TestWindowGetMatchesFetch(t *testing.T) {
	plain := windowSpec()
	headers := windowSpec()
	headers.Headers = true
	dups := windowSpec()
	dups.RetainDuplicates, dups.Headers = true, true
	for _, c := range []struct {
		spec  pipeline.StoreSpec
		cache int64
	}{{plain, 0}, {plain, DefaultCacheBytes}, {headers, 0}, {headers, DefaultCacheBytes}, {dups, DefaultCacheBytes}} {
		spec := c.spec
		t.Run(fmt.Sprintf("headers=%v,dups=%v,cache=%d", spec.Headers, spec.RetainDuplicates, c.cache), func(t *testing.T) {
			db, err := Open(t.TempDir(), Options{CacheBytes: c.cache})
			noErr(t, err)
			t.Cleanup(func() { db.Close() })
			s, err := db.WindowStore(spec, 0)
			noErr(t, err)
			put := func(key string, start int64, value string) {
				t.Helper()
				var v []byte
				if value != "-" {
					v = []byte(value)
				}
				h := pipeline.Headers{{Key: "h", Value: []byte(value)}, {Key: "null"}}
				_, err := s.PutWithHeaders([]byte(key), start, v, start+1, h)
				noErr(t, err)
			}
			put("a", 0, "a0")
			put("a", 10, "a10")
			put("a", 20, "a20")
			put("a", 50, "a50")
			put("a", 50, "a50'") // a duplicate, or an overwrite
			put("b", 0, "b0")
			put("b", 60, "")
			put("b", 70, "b70")
			commit(t, db)
			put("a", 20, "a20'")
			put("a", 30, "a30")
			put("b", 70, "-")  // a delete, ignored by a store retaining duplicates
			put("c", 110, "c") // windows before 11 expire at READ_UNCOMMITTED

			keys := []string{"a", "b", "c", "z"}
			starts := []int64{0, 5, 10, 20, 30, 50, 60, 70, 110}
			compare := func() {
				t.Helper()
				for _, level := range []IsolationLevel{ReadUncommitted, ReadCommitted} {
					v := s.View(level)
					for _, k := range keys {
						for _, start := range starts {
							want := fetchFirst(t, v, []byte(k), start)
							val, ts, err := v.Get([]byte(k), start)
							noErr(t, err)
							if got := fmt.Sprintf("%s@%d", val, ts); val == nil && want != "" || val != nil && !strings.HasPrefix(want, got+" ") {
								t.Errorf("%v %s@%d: get %q, fetch %q", level, k, start, got, want)
							}
							val, ts, h, err := v.GetWithHeaders([]byte(k), start)
							noErr(t, err)
							got := ""
							if val != nil {
								got = fmt.Sprintf("%s@%d %q", val, ts, h)
							}
							if got != want {
								t.Errorf("%v %s@%d: getWithHeaders %q, fetch %q", level, k, start, got, want)
							}
						}
					}
				}
			}
			compare()
			expect := func(level IsolationLevel, k string, start int64, want string) {
				t.Helper()
				if got := fetchFirst(t, s.View(level), []byte(k), start); got != want {
					t.Errorf("%v %s@%d = %q, want %q", level, k, start, got, want)
				}
			}
			h := func(v string) string {
				if !spec.Headers {
					return "[]"
				}
				return fmt.Sprintf(`[{"h" %q} {"null" ""}]`, v)
			}
			// the cases compare covers
			expect(ReadUncommitted, "a", 0, "")
			expect(ReadUncommitted, "a", 10, "")
			expect(ReadCommitted, "a", 10, "a10@11 "+h("a10"))
			expect(ReadCommitted, "a", 20, "a20@21 "+h("a20"))
			expect(ReadUncommitted, "a", 30, "a30@31 "+h("a30"))
			expect(ReadCommitted, "a", 30, "")
			expect(ReadCommitted, "b", 60, "@61 "+h(""))
			expect(ReadCommitted, "b", 70, "b70@71 "+h("b70"))
			if spec.RetainDuplicates {
				expect(ReadUncommitted, "a", 20, "a20@21 "+h("a20"))
				expect(ReadUncommitted, "a", 50, "a50@51 "+h("a50"))
				expect(ReadUncommitted, "b", 70, "b70@71 "+h("b70"))
			} else {
				expect(ReadUncommitted, "a", 20, "a20'@21 "+h("a20'"))
				expect(ReadUncommitted, "a", 50, "a50'@51 "+h("a50'"))
				expect(ReadUncommitted, "b", 70, "")
			}
			commit(t, db)
			compare()
			expect(ReadCommitted, "a", 10, "")
			expect(ReadCommitted, "a", 30, "a30@31 "+h("a30"))
			if !spec.RetainDuplicates {
				put("b", 60, "-")
				expect(ReadUncommitted, "b", 60, "")
				compare()
			}
		})
	}
}

// fetchFirst renders the first window of a one-window Fetch as "value@ts headers", or ""
// when there is none.
func fetchFirst(t *testing.T, v WindowView, key []byte, start int64) string {
	t.Helper()
	it := v.Fetch(key, start, start, false)
	defer it.Close()
	if !it.Next() {
		noErr(t, it.Err())
		return ""
	}
	h, err := it.Headers()
	noErr(t, err)
	return fmt.Sprintf("%s@%d %q", it.Value(), it.Timestamp(), h)
}

// A held window stays stored however far the retention moves on: commits (the epoch's own
// writes, the walking sweep and the index sweep) keep it, FetchHeld finds it, other reads
// do not; once the hold moves past it, the next sweep deletes it.
func TestWindowHoldKeepsExpiredWindowsStored(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.WindowStore(windowSpec(), 0) // retention 100
	noErr(t, err)
	put := func(key string, start int64) {
		t.Helper()
		ok, err := s.Put([]byte(key), start, []byte("v"), start)
		if err != nil || !ok {
			t.Fatalf("put %s@%d: %v %v", key, start, ok, err)
		}
	}
	s.HoldFrom(10)
	put("a", 0)
	put("b", 10)
	put("c", 20)
	put("d", 200) // cutoff 101: everything else has expired in the same epoch
	commit(t, db) // a walking sweep
	equal(t, windows(t, s.All(false)), []string{"d[200,210)=v@200"})
	equal(t, windows(t, s.FetchHeld(0, math.MaxInt64)), []string{"b[10,20)=v@10", "c[20,30)=v@20", "d[200,210)=v@200"})
	put("e", 260) // cutoff 161, a sweep from the index
	commit(t, db)
	if n := countRaw(t, db, s.p); n != 4 {
		t.Fatalf("%d windows in LevelDB, want b, c, d and e", n)
	}
	s.HoldFrom(200)
	put("f", 320) // cutoff 221, held from 200
	commit(t, db)
	equal(t, windows(t, s.FetchHeld(0, math.MaxInt64)), []string{"d[200,210)=v@200", "e[260,270)=v@260", "f[320,330)=v@320"})
	s.HoldFrom(math.MaxInt64)
	put("g", 380) // cutoff 281
	commit(t, db)
	equal(t, windows(t, s.FetchHeld(0, math.MaxInt64)), []string{"f[320,330)=v@320", "g[380,390)=v@380"})
}

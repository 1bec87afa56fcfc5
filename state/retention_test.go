package state

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/stoatflow/stoatflow/pipeline"
)

// rawKeys lists the store keys LevelDB holds for a partition, as "key@time".
func rawKeys(t *testing.T, db *DB, p *partition) []string {
	t.Helper()
	it := db.ldb.db.NewIterator(util.BytesPrefix(p.prefix), nil)
	defer it.Release()
	var out []string
	for it.Next() {
		k := it.Key()[len(p.prefix):]
		tm, err := p.keyTime(k)
		noErr(t, err)
		out = append(out, fmt.Sprintf("%x@%d", k, tm))
	}
	noErr(t, it.Error())
	return out
}

// A sweep after the first deletes what the partition's index holds and reads nothing: a key
// LevelDB holds that no put made (planted here) outlives it, and the walking sweep of the
// next open removes it.
func TestExpirySweepDeletesIndexedKeysWithoutWalking(t *testing.T) {
	db, _ := openDB(t)
	spec := windowSpec() // retention 100: a sweep every 50 ms of stream time
	s, err := db.WindowStore(spec, 0)
	noErr(t, err)
	put := func(key string, start int64) {
		t.Helper()
		ok, err := s.Put([]byte(key), start, []byte("v"), start)
		if err != nil || !ok {
			t.Fatalf("put %s@%d: %v %v", key, start, ok, err)
		}
	}
	put("a", 0)
	put("b", 100) // cutoff 1: the first sweep walks, deletes a and indexes b
	commit(t, db)
	if s.p.expiry == nil {
		t.Fatal("no expiry index after the first sweep")
	}
	planted := appendWindowKey(append([]byte{}, s.p.prefix...), []byte("planted"), 10, 0)
	noErr(t, db.ldb.db.Put(planted, appendTimestamped(nil, []byte("v"), 10), nil))
	put("c", 200) // cutoff 101: b and planted have expired
	commit(t, db)
	equal(t, rawKeys(t, db, s.p), []string{fmt.Sprintf("%x@200", appendWindowKey(nil, []byte("c"), 200, 0)),
		fmt.Sprintf("%x@10", planted[len(s.p.prefix):])})

	db = reopen(t, db)
	s, err = db.WindowStore(spec, 0)
	noErr(t, err)
	put("d", 201)
	commit(t, db)
	equal(t, rawKeys(t, db, s.p), []string{fmt.Sprintf("%x@200", appendWindowKey(nil, []byte("c"), 200, 0)),
		fmt.Sprintf("%x@201", appendWindowKey(nil, []byte("d"), 201, 0))})
}

// An index that grows past its bound is dropped, and the sweeps walk the partition again.
func TestExpiryIndexOverItsBoundFallsBackToWalking(t *testing.T) {
	defer func(n int64) { expiryIndexMaxBytes = n }(expiryIndexMaxBytes)
	expiryIndexMaxBytes = 3 * (10 + expiryEntryOverhead)
	db, _ := openDB(t)
	s, err := db.WindowStore(windowSpec(), 0)
	noErr(t, err)
	for i, start := range []int64{100, 101, 102, 103} {
		_, err := s.Put([]byte{'k', byte(i)}, start, []byte("v"), start)
		noErr(t, err)
		commit(t, db)
	}
	if s.p.expiry != nil {
		t.Fatalf("the index holds %d bytes, over its bound of %d", s.p.expiry.bytes, expiryIndexMaxBytes)
	}
	planted := appendWindowKey(append([]byte{}, s.p.prefix...), []byte("planted"), 10, 0)
	noErr(t, db.ldb.db.Put(planted, appendTimestamped(nil, []byte("v"), 10), nil))
	_, err = s.Put([]byte("k"), 200, []byte("v"), 200)
	noErr(t, err)
	commit(t, db)
	if got := rawKeys(t, db, s.p); slices.Contains(got, fmt.Sprintf("%x@10", planted[len(s.p.prefix):])) || len(got) != 4 {
		t.Fatalf("after a sweep at cutoff 101 LevelDB holds %q, want the windows from 101 on", got)
	}
}

// The expiry indexes of one database share one bound: with many store partitions each
// under it alone, the partition whose index would take them over it walks instead, and the
// bytes of a dropped index are given back.
func TestExpiryIndexesOfADatabaseShareOneBound(t *testing.T) {
	defer func(n int64) { expiryIndexMaxBytes = n }(expiryIndexMaxBytes)
	entry := int64(len(appendWindowKey(nil, []byte("a"), 100, 0))) + expiryEntryOverhead
	expiryIndexMaxBytes = 5 * entry
	db, _ := openDB(t)
	var stores []*WindowStore
	for part := int32(0); part < 3; part++ {
		s, err := db.WindowStore(windowSpec(), part)
		noErr(t, err)
		stores = append(stores, s)
	}
	// Two keys in each of the first two partitions' indexes, then a third partition that
	// would take the sum to 6 keys: over the bound of 5.
	for i, s := range stores {
		for j := range 2 {
			_, err := s.Put([]byte{'a' + byte(j)}, 100+int64(i), []byte("v"), 100)
			noErr(t, err)
		}
		commit(t, db)
	}
	for i, s := range stores[:2] {
		if s.p.expiry == nil || s.p.expiry.bytes != 2*entry {
			t.Fatalf("partition %d: expiry index %+v, want one of 2 keys", i, s.p.expiry)
		}
	}
	if stores[2].p.expiry != nil {
		t.Fatalf("partition 2 kept an index of %d bytes over the database's bound", stores[2].p.expiry.bytes)
	}
	if db.expiryBytes.Load() != 4*entry {
		t.Fatalf("the database counts %d bytes of expiry indexes, want %d (the dropped index given back)", db.expiryBytes.Load(), 4*entry)
	}
}

// Whatever happens to a window or session store partition (puts, deletes, late puts,
// aborted epochs, restarts, restores, wipes), after every commit LevelDB holds exactly what
// a sweep walking the whole partition at every due sweep would have left.
func TestExpiryLeavesWhatAWalkingSweepLeaves(t *testing.T) {
	for _, kind := range []string{"window", "window-duplicates", "session"} {
		t.Run(kind, func(t *testing.T) {
			for seed := int64(1); seed <= 8; seed++ {
				checkExpiryAgainstModel(t, kind, seed)
			}
		})
	}
}

func checkExpiryAgainstModel(t *testing.T, kind string, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	db, _ := openDB(t)
	spec := windowSpec()
	spec.Retention = 40
	if kind == "window-duplicates" {
		spec.RetainDuplicates = true
	}
	if kind == "session" {
		spec = pipeline.StoreSpec{Name: "s", Type: pipeline.SessionStoreType, Retention: 40, Logged: true}
	}
	var ws *WindowStore
	var ss *SessionStore
	var p *partition
	open := func() {
		var err error
		if kind == "session" {
			ss, err = db.SessionStore(spec, 0)
			p = ss.p
		} else {
			ws, err = db.WindowStore(spec, 0)
			p = ws.p
		}
		noErr(t, err)
	}
	open()
	committed := map[string]int64{} // store key -> time, as LevelDB should hold it
	pending := map[string]int64{}   // this epoch's puts (time) and deletes (math.MinInt64)
	var order []string
	clock := int64(0)
	for step := 0; step < 200; step++ {
		switch op := rng.Intn(20); {
		case op < 12: // a put or a delete near the stream time, some of them late
			clock += int64(rng.Intn(6))
			key := []byte{'k', byte('a' + rng.Intn(4))}
			tm := clock - int64(rng.Intn(60))
			value := []byte("v")
			if rng.Intn(5) == 0 {
				value = nil
			}
			var ok bool
			var err error
			var sk []byte
			if kind == "session" {
				ok, err = ss.Put(key, tm-int64(rng.Intn(3)), tm, value, tm)
				sk = p.kbuf
			} else {
				ok, err = ws.Put(key, tm, value, tm)
				sk = p.kbuf
			}
			noErr(t, err)
			if !ok || (value == nil && spec.RetainDuplicates) {
				continue
			}
			k := string(sk)
			if _, seen := pending[k]; !seen {
				order = append(order, k)
			}
			if value == nil {
				pending[k] = math.MinInt64
			} else {
				pending[k] = tm
			}
		case op < 16:
			noErr(t, db.Commit(nil))
			cutoff := retentionCutoff(p.streamTime.Load(), spec.Retention)
			for _, k := range order {
				if tm := pending[k]; tm == math.MinInt64 || tm < cutoff {
					delete(committed, k)
				} else {
					committed[k] = tm
				}
			}
			for k, tm := range committed {
				if tm < p.lastSweep {
					delete(committed, k)
				}
			}
			clear(pending)
			order = order[:0]
			var want []string
			for k, tm := range committed {
				want = append(want, fmt.Sprintf("%x@%d", k, tm))
			}
			slices.Sort(want)
			equal(t, rawKeys(t, db, p), want)
		case op < 17:
			db.Abort()
			clear(pending)
			order = order[:0]
			clock = max(p.streamTime.Load(), 0)
		case op < 18:
			db.Abort()
			clear(pending)
			order = order[:0]
			db = reopen(t, db)
			open()
		case op < 19: // a restore of changelog records, expired ones among them
			db.Abort()
			clear(pending)
			order = order[:0]
			var recs []ChangelogRecord
			for i := 0; i < 3; i++ {
				key := []byte{'r', byte('a' + rng.Intn(3))}
				tm := clock - int64(rng.Intn(80))
				var ck, sk []byte
				if kind == "session" {
					ck, sk = appendSessionChangelogKey(nil, key, tm, tm), appendSessionKey(nil, key, tm, tm)
				} else {
					ck, sk = appendWindowChangelogKey(nil, key, tm, 0), appendWindowKey(nil, key, tm, 0)
				}
				recs = append(recs, ChangelogRecord{Key: ck, Value: []byte("v"), Timestamp: tm})
				committed[string(sk)] = tm
			}
			noErr(t, db.Restore(spec, 0, recs, int64(step)))
		default:
			db.Abort()
			clear(pending)
			order = order[:0]
			noErr(t, db.Wipe(spec.Name, 0))
			clear(committed)
		}
	}
}

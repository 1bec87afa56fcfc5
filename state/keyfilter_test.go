package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syndtr/goleveldb/leveldb"

	"github.com/stoatflow/stoatflow/pipeline"
)

// crashClose closes db's LevelDB as a crash would leave it: nothing of Close's own work
// (the saved key filter) is written.
func crashClose(t testing.TB, db *DB) {
	t.Helper()
	noErr(t, db.ldb.db.Close())
	noErr(t, db.stor.Close())
}

// The key filter answers reads of keys LevelDB never held, so it must hold every key
// there is: those committed and restored since Open, past the first layer's capacity, and
// those a clean Close saved it with. After a crash the database has no saved filter and
// does not use one.
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
	check := func(s *KeyValueStore, extra int) {
		t.Helper()
		for i := range n + extra {
			if v, err := s.View(ReadCommitted).Get(key(i)); err != nil || v == nil {
				t.Fatalf("key %d: %q %v", i, v, err)
			}
		}
		if v, err := s.Get([]byte("restored")); err != nil || string(v) != "r" {
			t.Fatalf("restored key: %q %v", v, err)
		}
	}
	turnedAway := func(db *DB, s *KeyValueStore) int {
		misses := 0
		for i := 2 * n; i < 3*n; i++ {
			if !db.keys.mayHold(append(dataPrefix(s.p.id, 0), key(i)...)) {
				misses++
			}
		}
		return misses
	}
	check(s, 0)
	if m := turnedAway(db, s); m < n*9/10 {
		t.Fatalf("the filter turned away only %d of %d absent keys", m, n)
	}
	noErr(t, db.Close())

	db, err = Open(dir, Options{})
	noErr(t, err)
	if !db.keys.ready {
		t.Fatal("the filter a clean Close saved is not in use after the reopen")
	}
	s, err = db.KeyValueStore(spec, 0)
	noErr(t, err)
	check(s, 0)
	if m := turnedAway(db, s); m < n*9/10 {
		t.Fatalf("the reopened filter turned away only %d of %d absent keys", m, n)
	}
	// Keys the saved filter lacks, then a crash: the next Open must not trust what the
	// last Close saved.
	for i := n; i < n+1000; i++ {
		noErr(t, s.Put(key(i), []byte("v"), 0))
	}
	commit(t, db)
	crashClose(t, db)

	db, err = Open(dir, Options{})
	noErr(t, err)
	defer db.Close()
	if db.keys.ready {
		t.Fatal("a database with tables and no saved filter uses one")
	}
	s, err = db.KeyValueStore(spec, 0)
	noErr(t, err)
	check(s, 1000)
	// A filter not in use does not grow with the keys written.
	for i := range n {
		noErr(t, s.Put(key(i), []byte("w"), 0))
	}
	commit(t, db)
	if l := *db.keys.layers.Load(); len(l) != 1 || l[0].n != 0 {
		t.Fatalf("the unused filter learnt %d keys in %d layers", l[len(l)-1].n, len(l))
	}
}

// A reopened database answers reads of absent keys from the saved filter, without
// LevelDB: a key written into LevelDB behind the filter's back stays unseen.
func TestKeyFilterSavedAnswersAbsentKeysAfterReopen(t *testing.T) {
	db, _ := openDB(t)
	spec := pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}
	s, err := db.KeyValueStore(spec, 0)
	noErr(t, err)
	for i := range 1000 {
		noErr(t, s.Put(fmt.Appendf(nil, "k%d", i), []byte("v"), 0))
	}
	commit(t, db)
	db = reopen(t, db)
	s, err = db.KeyValueStore(spec, 0)
	noErr(t, err)
	var hidden []byte
	for i := 0; hidden == nil; i++ {
		if k := fmt.Appendf(nil, "hidden%d", i); !s.p.mayHold(k) {
			hidden = k
		}
	}
	noErr(t, db.ldb.db.Put(s.p.diskKey(hidden), []byte("x"), nil))
	if v, err := s.Get(hidden); err != nil || v != nil {
		t.Fatalf("a key the filter never held read %q %v: the read went to LevelDB", v, err)
	}
	if v, err := s.Get([]byte("k999")); err != nil || string(v) != "v" {
		t.Fatalf("k999 = %q %v", v, err)
	}
}

// A saved filter that does not check out (another format, damage, a token that is not
// LevelDB's, no token) is dropped: the database then runs without one, and the file and
// the token are gone.
func TestKeyFilterSavedBadIsDropped(t *testing.T) {
	flip := func(off int) func(dir string) error {
		return func(dir string) error {
			path := filepath.Join(dir, filterFile)
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			b[(off+len(b))%len(b)] ^= 1
			return os.WriteFile(path, b, 0o600)
		}
	}
	withLevelDB := func(do func(ldb *leveldb.DB) error) func(dir string) error {
		return func(dir string) error {
			ldb, err := leveldb.OpenFile(dir, nil)
			if err != nil {
				return err
			}
			err = do(ldb)
			if cerr := ldb.Close(); err == nil {
				err = cerr
			}
			return err
		}
	}
	for _, c := range []struct {
		name   string
		damage func(dir string) error
	}{
		{"another format", flip(len(filterMagic))},
		{"a flipped bit", flip(-100)},
		{"a damaged checksum", flip(-1)},
		{"cut short", func(dir string) error { return os.Truncate(filepath.Join(dir, filterFile), 100) }},
		{"another token", withLevelDB(func(ldb *leveldb.DB) error { return ldb.Put(filterTokenKey, make([]byte, 8), nil) })},
		{"no token", withLevelDB(func(ldb *leveldb.DB) error { return ldb.Delete(filterTokenKey, nil) })},
		{"no file", func(dir string) error { return os.Remove(filepath.Join(dir, filterFile)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, _ := openDB(t)
			spec := pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}
			s, err := db.KeyValueStore(spec, 0)
			noErr(t, err)
			for i := range 2 * filterFirstKeys { // two layers at least
				noErr(t, s.Put(binary.BigEndian.AppendUint32(nil, uint32(i)), []byte("v"), 0))
			}
			commit(t, db)
			db = reopen(t, db)
			if !db.keys.ready || len(*db.keys.layers.Load()) < 2 {
				t.Fatal("the saved filter of two layers was not loaded")
			}
			noErr(t, db.Close())
			noErr(t, c.damage(db.dir))
			db2, err := Open(db.dir, testOptions)
			noErr(t, err)
			defer db2.Close()
			if db2.keys.ready {
				t.Fatal("a bad saved filter is in use")
			}
			if _, err := os.Stat(filepath.Join(db.dir, filterFile)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the saved filter's file is still there: %v", err)
			}
			if _, err := db2.ldb.Get(filterTokenKey); !errors.Is(err, leveldb.ErrNotFound) {
				t.Fatalf("the saved filter's token is still there: %v", err)
			}
			s, err = db2.KeyValueStore(spec, 0)
			noErr(t, err)
			if v, err := s.Get(binary.BigEndian.AppendUint32(nil, 2*filterFirstKeys-1)); err != nil || string(v) != "v" {
				t.Fatalf("the last key read %q %v", v, err)
			}
		})
	}
}

// The filter never says absent for a key the database holds, whatever happened: random
// puts, deletes, aborts, restores, wipes and clean reopens, and a crash at a random point of
// each round, checked against a model of the committed state after each step.
func TestKeyFilterModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 1))
	specs := []pipeline.StoreSpec{
		{Name: "a", Type: pipeline.KeyValueStoreType, Logged: true},
		{Name: "b", Type: pipeline.KeyValueStoreType, Logged: true},
	}
	type part struct {
		spec int
		num  int32
	}
	parts := []part{{0, 0}, {0, 1}, {1, 0}}
	readyChecks, checks := 0, 0
	for round := range 6 {
		dir := t.TempDir()
		model := map[part]map[string]string{}
		for _, p := range parts {
			model[p] = map[string]string{}
		}
		db, err := Open(dir, testOptions)
		noErr(t, err)
		store := func(p part) *KeyValueStore {
			s, err := db.KeyValueStore(specs[p.spec], p.num)
			noErr(t, err)
			return s
		}
		key := func() string { return fmt.Sprintf("key-%d", rng.IntN(40_000)) }
		crashAt := 20 + rng.IntN(40)
		var ops []string
		for step := range 70 {
			p := parts[rng.IntN(len(parts))]
			var op string
			switch r := rng.IntN(100); {
			case step == crashAt:
				op = "crash"
				crashClose(t, db)
				db, err = Open(dir, testOptions)
				noErr(t, err)
			case r < 55:
				op = "commit"
				pending := map[part]map[string]string{}
				for range rng.IntN(400) {
					q := parts[rng.IntN(len(parts))]
					k, v := key(), fmt.Sprint(step)
					if pending[q] == nil {
						pending[q] = map[string]string{}
					}
					if rng.IntN(4) == 0 {
						noErr(t, store(q).Delete([]byte(k), 0))
						pending[q][k] = ""
					} else {
						noErr(t, store(q).Put([]byte(k), []byte(v), 0))
						pending[q][k] = v
					}
				}
				commit(t, db)
				for q, kv := range pending {
					for k, v := range kv {
						if v == "" {
							delete(model[q], k)
						} else {
							model[q][k] = v
						}
					}
				}
			case r < 65:
				op = "abort"
				for range rng.IntN(100) {
					noErr(t, store(p).Put([]byte(key()), []byte("aborted"), 0))
				}
				db.Abort()
			case r < 77:
				op = "restore"
				var recs []ChangelogRecord
				for range rng.IntN(300) {
					k := key()
					if rng.IntN(5) == 0 {
						recs = append(recs, ChangelogRecord{Store: specs[p.spec].Name, Key: []byte(k)})
						continue
					}
					recs = append(recs, ChangelogRecord{Store: specs[p.spec].Name, Key: []byte(k), Value: []byte(fmt.Sprint("r", step))})
				}
				noErr(t, db.Restore(specs[p.spec], p.num, recs, int64(step)))
				for _, r := range recs {
					if r.Value == nil {
						delete(model[p], string(r.Key))
					} else {
						model[p][string(r.Key)] = string(r.Value)
					}
				}
			case r < 82:
				op = "wipe"
				noErr(t, db.Wipe(specs[p.spec].Name, p.num))
				model[p] = map[string]string{}
			default:
				op = "reopen"
				noErr(t, db.Close())
				db, err = Open(dir, testOptions)
				noErr(t, err)
			}
			ops = append(ops, op)
			checks++
			if db.keys.ready {
				readyChecks++
			}
			for _, q := range parts {
				s := store(q)
				for k, want := range model[q] {
					if !db.keys.mayHold(s.p.diskKey([]byte(k))) {
						t.Fatalf("round %d after %v: the filter says %s/%d %s is absent", round, ops, specs[q.spec].Name, q.num, k)
					}
					if v, err := s.View(ReadCommitted).Get([]byte(k)); err != nil || string(v) != want {
						t.Fatalf("round %d after %v: %s/%d %s = %q %v, want %q", round, ops, specs[q.spec].Name, q.num, k, v, err, want)
					}
				}
			}
		}
		noErr(t, db.Close())
	}
	// The model checks the filter only while one is in use: before each round's crash.
	if readyChecks < checks/4 {
		t.Fatalf("a filter was in use in %d of %d steps", readyChecks, checks)
	}
	t.Logf("a filter was in use in %d of %d steps", readyChecks, checks)
}

// A database found damaged answers no read from LevelDB any more, and none from its filter
// either: a key the filter knows to be absent is an error too.
func TestKeyFilterDamagedDatabaseAnswersNothing(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)
	noErr(t, s.Put([]byte("a"), []byte("1"), 0))
	commit(t, db)
	if !db.keys.ready || s.p.mayHold([]byte("never written")) {
		t.Fatal("the filter does not know the key to be absent")
	}
	_ = db.ldb.fail(errors.New("a damaged table"))
	if _, err := s.Get([]byte("never written")); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Get of an absent key from a damaged database = %v, want ErrCorrupt", err)
	}
}

// A filter that would grow past Options.KeyFilterMaxBytes is turned off, with a warning:
// its memory goes, every read goes to LevelDB and finds what is there, and Close saves
// no filter. A saved filter larger than the bound of the next Open is turned off there.
func TestKeyFilterBoundTurnsItOff(t *testing.T) {
	firstLayer := int64(8 * filterWords(filterFirstKeys))
	var logged bytes.Buffer
	dir := t.TempDir()
	opts := Options{KeyFilterMaxBytes: 2 * firstLayer, Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	db, err := Open(dir, opts)
	noErr(t, err)
	spec := pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}
	s, err := db.KeyValueStore(spec, 0)
	noErr(t, err)
	key := func(i int) []byte { return binary.BigEndian.AppendUint32([]byte("k"), uint32(i)) }
	const n = filterFirstKeys + 1000 // the second layer would take the filter past the bound
	for i := range n {
		noErr(t, s.Put(key(i), []byte("v"), 0))
		if i%5000 == 4999 {
			commit(t, db)
		}
	}
	commit(t, db)
	if db.keys.inUse() {
		t.Fatalf("the filter is in use at %d bytes, bound %d", db.keys.bytes(), opts.KeyFilterMaxBytes)
	}
	if b := db.keys.bytes(); b > 64 {
		t.Fatalf("the filter turned off still holds %d bytes", b)
	}
	if !strings.Contains(logged.String(), "key filter is turned off") {
		t.Fatalf("no warning logged: %q", logged.String())
	}
	if !s.p.mayHold([]byte("never written")) {
		t.Fatal("the filter turned off says a key is absent")
	}
	for i := range n {
		if v, err := s.View(ReadCommitted).Get(key(i)); err != nil || string(v) != "v" {
			t.Fatalf("key %d: %q %v", i, v, err)
		}
	}
	noErr(t, db.Close())
	if _, err := os.Stat(filepath.Join(dir, filterFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Close saved the filter turned off: %v", err)
	}

	// A filter saved within a larger bound is too large for a smaller one.
	dir = t.TempDir()
	db, err = Open(dir, Options{})
	noErr(t, err)
	s, err = db.KeyValueStore(spec, 0)
	noErr(t, err)
	for i := range n {
		noErr(t, s.Put(key(i), []byte("v"), 0))
	}
	commit(t, db)
	noErr(t, db.Close())
	logged.Reset()
	db, err = Open(dir, opts)
	noErr(t, err)
	defer db.Close()
	if db.keys.inUse() || !strings.Contains(logged.String(), "key filter is turned off") {
		t.Fatalf("a saved filter of %d bytes is in use under a bound of %d (log %q)", db.keys.bytes(), opts.KeyFilterMaxBytes, logged.String())
	}
	if _, err := Open(t.TempDir(), Options{KeyFilterMaxBytes: -1}); err == nil || !strings.Contains(err.Error(), "key filter bound -1 bytes is negative") {
		t.Fatalf("Open with a negative bound = %v", err)
	}
}

package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/storage"
	"github.com/syndtr/goleveldb/leveldb/table"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state/faultdisk"
)

var corruptSpec = pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType, Logged: true}

const corruptKeys = 2000

func corruptKey(i int) []byte { return []byte(fmt.Sprintf("key-%05d", i)) }

// splitDB writes corruptKeys keys, closes the database and splits it into tables by key
// range (faultdisk.SplitTables). The first table holds the format marker and the
// catalogue, which Open reads; no other table is read until a read reaches its keys.
func splitDB(t *testing.T) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	db, err := Open(dir, testOptions)
	noErr(t, err)
	s, err := db.KeyValueStore(corruptSpec, 0)
	noErr(t, err)
	for i := range corruptKeys {
		noErr(t, s.Put(corruptKey(i), []byte(fmt.Sprintf("value %d of a key of the corruption tests", i)), 0))
	}
	commit(t, db)
	noErr(t, db.Close())
	tables, err := faultdisk.SplitTables(dir)
	noErr(t, err)
	if len(tables) < 3 {
		t.Fatalf("%d tables, want several", len(tables))
	}
	return dir, tables
}

// readAll reads every key and iterates the store; it returns the first error and checks
// that every error is the database's corruption.
func readAll(t *testing.T, db *DB) error {
	t.Helper()
	s, err := db.KeyValueStore(corruptSpec, 0)
	if err != nil {
		return err
	}
	var first error
	note := func(err error) {
		if err == nil {
			return
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("read error %v does not wrap ErrCorrupt", err)
		}
		if first == nil {
			first = err
		}
	}
	for i := range corruptKeys {
		_, err := s.Get(corruptKey(i))
		note(err)
	}
	it := s.All(false)
	for it.Next() {
	}
	note(it.Err())
	it.Close()
	return first
}

// Damage of every kind is an error wrapping ErrCorrupt, found at Open or by the first read
// that reaches it, and never a panic. From then on every read and write that needs LevelDB
// fails with it, and Corruption reports it: a damaged database is not used any more.
func TestCorruptionIsAnErrorNeverAPanic(t *testing.T) {
	rest := func(tables []string) []string { return tables[1:] }
	all := func(tables []string) []string { return tables }
	for _, c := range []struct {
		name   string
		damage func(dir string, tables []string) error
		atOpen bool
	}{
		{"data block of the table Open reads", func(_ string, ts []string) error { return faultdisk.GarbleBlock(ts[0]) }, true},
		{"footer of the table Open reads", func(_ string, ts []string) error { return faultdisk.GarbleFooter(ts[0]) }, true},
		{"data blocks of the other tables", func(_ string, ts []string) error { return each(rest(ts), faultdisk.GarbleBlock) }, false},
		{"footers of the other tables", func(_ string, ts []string) error { return each(rest(ts), faultdisk.GarbleFooter) }, false},
		{"every footer", func(_ string, ts []string) error { return each(all(ts), faultdisk.GarbleFooter) }, true},
		{"MANIFEST", func(dir string, _ []string) error { return garbleFiles(dir, "MANIFEST-*", 10, 20) }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, tables := splitDB(t)
			noErr(t, c.damage(dir, tables))
			db, err := Open(dir, testOptions)
			if c.atOpen {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Open = %v, want ErrCorrupt", err)
				}
				return
			}
			noErr(t, err)
			defer db.Close()
			if db.Corruption() != nil {
				t.Fatalf("corruption %v before any read", db.Corruption())
			}
			err = readAll(t, db)
			if err == nil || !errors.Is(db.Corruption(), ErrCorrupt) {
				t.Fatalf("reads found %v, Corruption = %v; want the damage reported", err, db.Corruption())
			}
			t.Logf("found: %v", err)
			// Even the keys of the healthy table, and a commit, fail now.
			s, err := db.KeyValueStore(corruptSpec, 0)
			noErr(t, err)
			noErr(t, s.Put([]byte("new"), []byte("v"), 0))
			if err := db.Commit(nil); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Commit after the corruption = %v, want ErrCorrupt", err)
			}
			// (A key read before may still come from the read cache: committed values.)
			if _, err := s.Get([]byte("never written")); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Get after the corruption = %v, want ErrCorrupt", err)
			}
		})
	}
}

// A journal record that does not check out is corruption at Open (strict journal).
func TestCorruptJournalAtOpen(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, testOptions)
	noErr(t, err)
	s, err := db.KeyValueStore(corruptSpec, 0)
	noErr(t, err)
	noErr(t, s.Put([]byte("k"), []byte("a value long enough to garble"), 0))
	commit(t, db)
	noErr(t, db.Close())
	noErr(t, garbleFiles(dir, "*.log", 10, 20))
	if _, err := Open(dir, testOptions); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open = %v, want ErrCorrupt", err)
	}
}

// goleveldb opens a table when a read reaches it, or when a compaction takes it as input,
// on its own goroutine where no recover could catch its panic on a damaged footer. The
// footer is checked before goleveldb decodes it, so the compaction fails with a
// corruption error (and the next write with it) instead of crashing the process.
func TestDamagedFooterFoundByACompactionIsAnError(t *testing.T) {
	dir, tables := splitDB(t)
	noErr(t, each(tables[1:], faultdisk.GarbleFooter))
	// New versions across the whole key range, one run at a time: each Open turns the
	// previous run's journal into a level-0 table over the damaged ones, and at the fourth
	// goleveldb's compaction goroutine starts by itself to merge them into the damaged
	// tables, as the agent's writes would make it. The test does not call CompactRange:
	// goleveldb closes its reply channel when the compaction error reaches it, while
	// the failing compaction goroutine may still reply on it (syndtr/goleveldb#356), a race
	// that -race reports under load.
	// Every Open writes too (it deletes the saved key filter's token), so the corruption
	// may reach an Open or a commit of these runs already: found as early as it can be.
	found := func(what string, err error) bool {
		if errors.Is(err, ErrCorrupt) {
			t.Logf("%s: %v", what, err)
			return true
		}
		noErr(t, err)
		return false
	}
	for range opt.DefaultCompactionL0Trigger {
		db, err := Open(dir, testOptions)
		if found("open", err) {
			return
		}
		s, err := db.KeyValueStore(corruptSpec, 0)
		noErr(t, err)
		for i := 0; i < corruptKeys; i += 50 {
			noErr(t, s.Put(corruptKey(i), []byte("new"), 0))
		}
		if found("commit", db.Commit(nil)) {
			_ = db.Close()
			return
		}
		noErr(t, db.Close())
	}
	db, err := Open(dir, testOptions)
	if found("open", err) {
		return
	}
	defer db.Close()
	s, err := db.KeyValueStore(corruptSpec, 0)
	noErr(t, err)
	// No read reaches the damaged tables: the writes fail with the corruption as soon as
	// the compaction's error handler has it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		noErr(t, s.Put([]byte("new"), []byte("v"), 0))
		err := db.Commit(nil)
		if errors.Is(err, ErrCorrupt) {
			t.Logf("commit: %v", err)
			break
		}
		noErr(t, err)
		if time.Now().After(deadline) {
			t.Fatal("commits still succeed 30 s after the damaged tables' compaction started")
		}
	}
}

// A panic inside goleveldb is recovered at the boundary as corruption: here goleveldb's
// table reader meets a footer whose handles overflow, as it would without checkedStorage.
// A panic of this package's own code goes on.
func TestGoleveldbPanicsAreRecoveredOthersAreNot(t *testing.T) {
	g := &ldbGuard{dir: "dir"}
	footer := append(bytes.Repeat([]byte{0xff}, tableFooterLen-len(tableMagic)), tableMagic...)
	err := func() (err error) {
		defer g.recover(&err)
		_, err = table.NewReader(bytes.NewReader(footer), int64(len(footer)), storage.FileDesc{}, nil, nil, &opt.Options{})
		return err
	}()
	if !errors.Is(err, ErrCorrupt) || !errors.Is(g.failed(), ErrCorrupt) || !strings.Contains(err.Error(), "goleveldb panicked") {
		t.Fatalf("goleveldb's panic gave %v (recorded %v), want a corruption", err, g.failed())
	}
	own := func() (r any) {
		defer func() { r = recover() }()
		var err error
		defer g.recover(&err)
		panic("a bug of package state")
	}()
	if own == nil {
		t.Fatal("a panic of package state was recovered as corruption")
	}
}

// checkTableFooter accepts a real footer and refuses handles that overflow or point past it.
func TestCheckTableFooter(t *testing.T) {
	footer := func(handles ...uint64) []byte {
		var b []byte
		for _, h := range handles {
			b = binary.AppendUvarint(b, h)
		}
		b = append(b, make([]byte, tableFooterLen-len(tableMagic)-len(b))...)
		return append(b, tableMagic...)
	}
	for _, c := range []struct {
		footer []byte
		pos    int64
		ok     bool
	}{
		{footer(100, 20, 125, 30), 160, true},
		{footer(100, 20, 125, 30), 159, false}, // the index block's trailer overlaps the footer
		{footer(100, 1<<62, 125, 30), 160, false},
		{append(bytes.Repeat([]byte{0xff}, 40), tableMagic...), 160, false},
		{bytes.Repeat([]byte{0xff}, 48), 160, true}, // no magic: a block, or left to goleveldb
	} {
		if err := checkTableFooter(c.footer, c.pos); (err == nil) != c.ok {
			t.Errorf("footer %x at %d: %v, want ok %v", c.footer, c.pos, err, c.ok)
		}
	}
}

func each(files []string, f func(string) error) error {
	for _, file := range files {
		if err := f(file); err != nil {
			return err
		}
	}
	return nil
}

func garbleFiles(dir, pattern string, off, n int64) error {
	files, err := faultdisk.Files(dir, pattern)
	if err != nil {
		return err
	}
	return each(files, func(f string) error { return faultdisk.Garble(f, off, n) })
}

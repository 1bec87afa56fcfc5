package state

import (
	"fmt"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

// testOptions are the options tests open databases with: the read cache on, as the agent
// runs, so every test also checks that the cache never changes what a read returns.
var testOptions = Options{CacheBytes: DefaultCacheBytes}

func openDB(t testing.TB) (*DB, string) {
	t.Helper()
	dir := t.TempDir()
	db, err := Open(dir, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, dir
}

func noErr(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func commit(t testing.TB, db *DB) {
	t.Helper()
	noErr(t, db.Commit(nil))
}

// kvs renders a key-value iteration as "key=value@ts" strings and closes it.
func kvs(t testing.TB, it *KeyValueIterator) []string {
	t.Helper()
	defer it.Close()
	var out []string
	for it.Next() {
		s := fmt.Sprintf("%x=%s", it.Key(), it.Value())
		if it.Timestamp() != NoTimestamp {
			s += fmt.Sprintf("@%d", it.Timestamp())
		}
		out = append(out, s)
	}
	noErr(t, it.Err())
	return out
}

func windows(t testing.TB, it *WindowIterator) []string {
	t.Helper()
	defer it.Close()
	var out []string
	for it.Next() {
		out = append(out, fmt.Sprintf("%s[%d,%d)=%s@%d", it.Key(), it.Start(), it.End(), it.Value(), it.Timestamp()))
	}
	noErr(t, it.Err())
	return out
}

func sessions(t testing.TB, it *SessionIterator) []string {
	t.Helper()
	defer it.Close()
	var out []string
	for it.Next() {
		out = append(out, fmt.Sprintf("%s[%d,%d]=%s", it.Key(), it.Start(), it.End(), it.Value()))
	}
	noErr(t, it.Err())
	return out
}

func equal(t testing.TB, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// reopen closes db and opens its directory again.
func reopen(t testing.TB, db *DB) *DB {
	t.Helper()
	noErr(t, db.Close())
	db2, err := Open(db.dir, testOptions)
	noErr(t, err)
	t.Cleanup(func() { db2.Close() })
	return db2
}

func mustCatalogSpec(t testing.TB, spec pipeline.StoreSpec) catalogSpec {
	t.Helper()
	s, err := catalogSpecOf(spec)
	noErr(t, err)
	return s
}

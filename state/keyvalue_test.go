package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

func TestKeyValueGetPutDelete(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)
	noErr(t, s.Put([]byte("a"), []byte("1"), 0))
	noErr(t, s.Put([]byte("empty"), []byte{}, 0))
	if v, _ := s.Get([]byte("a")); string(v) != "1" {
		t.Fatalf("a = %q", v)
	}
	commit(t, db)
	for _, lvl := range []IsolationLevel{ReadUncommitted, ReadCommitted} {
		v, err := s.View(lvl).Get([]byte("empty"))
		if err != nil || v == nil || len(v) != 0 {
			t.Fatalf("%s: empty value = %#v, %v", lvl, v, err)
		}
		if v, _ := s.View(lvl).Get([]byte("missing")); v != nil {
			t.Fatalf("%s: missing = %q", lvl, v)
		}
	}
	// a buffered delete hides the committed value until it commits
	noErr(t, s.Delete([]byte("a"), 0))
	if v, _ := s.Get([]byte("a")); v != nil {
		t.Fatalf("deleted a = %q", v)
	}
	if v, _ := s.View(ReadCommitted).Get([]byte("a")); string(v) != "1" {
		t.Fatalf("committed a = %q", v)
	}
	commit(t, db)
	if v, _ := s.View(ReadCommitted).Get([]byte("a")); v != nil {
		t.Fatalf("a after commit = %q", v)
	}
	// a nil value deletes
	noErr(t, s.Put([]byte("empty"), nil, 0))
	if v, _ := s.Get([]byte("empty")); v != nil {
		t.Fatalf("put nil did not delete: %q", v)
	}
	if err := s.Put(nil, []byte("x"), 0); err == nil {
		t.Fatal("null key accepted")
	}
	if err := s.Delete(nil, 0); err == nil {
		t.Fatal("null key delete accepted")
	}
}

func TestKeyValuePutIfAbsent(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)
	old, err := s.PutIfAbsent([]byte("k"), []byte("first"), 0)
	if err != nil || old != nil {
		t.Fatalf("first: %q %v", old, err)
	}
	old, err = s.PutIfAbsent([]byte("k"), []byte("second"), 0)
	if err != nil || string(old) != "first" {
		t.Fatalf("second: %q %v", old, err)
	}
	if v, _ := s.Get([]byte("k")); string(v) != "first" {
		t.Fatalf("k = %q", v)
	}
}

// Iteration is unsigned lexicographic and merges committed data, buffered puts and
// buffered deletes.
func TestKeyValueRangeOrder(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)
	for _, k := range [][]byte{{0x80}, {0x01}, {0x7f}, {0xff}, {0x7f, 0x00}} {
		noErr(t, s.Put(k, []byte("c"), 0))
	}
	commit(t, db)
	noErr(t, s.Put([]byte{0x7f}, []byte("b"), 0)) // overwrite committed
	noErr(t, s.Put([]byte{0x81}, []byte("b"), 0)) // new in buffer
	noErr(t, s.Delete([]byte{0xff}, 0))           // hides committed
	noErr(t, s.Delete([]byte{0x90}, 0))           // delete of an absent key
	noErr(t, s.Put([]byte{0x00}, []byte("b"), 0)) // before everything
	noErr(t, s.Put([]byte{0x7f, 0x00}, nil, 0))   // delete committed via nil

	equal(t, kvs(t, s.All(false)), []string{"00=b", "01=c", "7f=b", "80=c", "81=b"})
	equal(t, kvs(t, s.All(true)), []string{"81=b", "80=c", "7f=b", "01=c", "00=b"})
	equal(t, kvs(t, s.Range([]byte{0x7f}, []byte{0x80}, false)), []string{"7f=b", "80=c"})
	equal(t, kvs(t, s.Range([]byte{0x7f}, []byte{0x80}, true)), []string{"80=c", "7f=b"})
	equal(t, kvs(t, s.Range(nil, []byte{0x01}, false)), []string{"00=b", "01=c"})
	equal(t, kvs(t, s.Range([]byte{0x80}, nil, false)), []string{"80=c", "81=b"})
	equal(t, kvs(t, s.Range([]byte{0x80}, []byte{0x7f}, false)), nil)
	equal(t, kvs(t, s.PrefixScan([]byte{0x7f})), []string{"7f=b"})
	equal(t, kvs(t, s.PrefixScan([]byte{0x8})), nil)
	equal(t, kvs(t, s.PrefixScan(nil)), []string{"00=b", "01=c", "7f=b", "80=c", "81=b"})
	// READ_COMMITTED sees only the committed data
	equal(t, kvs(t, s.View(ReadCommitted).All(false)), []string{"01=c", "7f=c", "7f00=c", "80=c", "ff=c"})
	equal(t, kvs(t, s.View(ReadCommitted).PrefixScan([]byte{0x7f})), []string{"7f=c", "7f00=c"})

	n, err := s.ApproximateNumEntries()
	if err != nil || n != 5 {
		t.Fatalf("entries = %d, %v", n, err)
	}
	n, err = s.View(ReadCommitted).ApproximateNumEntries()
	if err != nil || n != 5 {
		t.Fatalf("committed entries = %d, %v", n, err)
	}
	commit(t, db)
	equal(t, kvs(t, s.View(ReadCommitted).All(false)), []string{"00=b", "01=c", "7f=b", "80=c", "81=b"})
}

// A store partition sees only its own keys, whatever the neighbours hold.
func TestStorePartitionsAreIsolated(t *testing.T) {
	db, _ := openDB(t)
	spec := pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}
	p0, err := db.KeyValueStore(spec, 0)
	noErr(t, err)
	p1, err := db.KeyValueStore(spec, 1)
	noErr(t, err)
	other, err := db.KeyValueStore(pipeline.StoreSpec{Name: "other", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)
	noErr(t, p0.Put([]byte("a"), []byte("p0"), 0))
	noErr(t, p1.Put([]byte("b"), []byte("p1"), 0))
	noErr(t, other.Put([]byte("c"), []byte("o"), 0))
	commit(t, db)
	equal(t, kvs(t, p0.All(false)), []string{"61=p0"})
	equal(t, kvs(t, p1.All(true)), []string{"62=p1"})
	equal(t, kvs(t, other.View(ReadCommitted).All(false)), []string{"63=o"})
}

func TestTimestampedKeyValue(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.TimestampedKeyValueStore(pipeline.StoreSpec{Name: "ts", Type: pipeline.TimestampedKeyValueStoreType, Logged: true}, 3)
	noErr(t, err)
	noErr(t, s.Put([]byte("k"), []byte("v"), 42))
	v, ts, err := s.Get([]byte("k"))
	if err != nil || string(v) != "v" || ts != 42 {
		t.Fatalf("get: %q %d %v", v, ts, err)
	}
	old, oldTs, err := s.PutIfAbsent([]byte("k"), []byte("w"), 43)
	if err != nil || string(old) != "v" || oldTs != 42 {
		t.Fatalf("putIfAbsent: %q %d %v", old, oldTs, err)
	}
	commit(t, db)
	// the stored value is [8-byte BE ts][value]
	raw, err := db.ldb.db.Get(append(dataPrefix(s.p.id, 3), 'k'), nil)
	noErr(t, err)
	if !bytes.Equal(raw, []byte{0, 0, 0, 0, 0, 0, 0, 42, 'v'}) {
		t.Fatalf("stored value %x", raw)
	}
	equal(t, kvs(t, s.View(ReadCommitted).All(false)), []string{"6b=v@42"})
	if _, _, h, err := s.GetWithHeaders([]byte("k")); err != nil || h != nil {
		t.Fatalf("headers of a plain timestamped store: %v %v", h, err)
	}
	noErr(t, s.Delete([]byte("k"), 77))
	if v, ts, _ := s.Get([]byte("k")); v != nil || ts != NoTimestamp {
		t.Fatalf("deleted: %q %d", v, ts)
	}
	cl := db.Changelog()
	if len(cl) != 1 || cl[0].Value != nil || cl[0].Timestamp != 77 || string(cl[0].Key) != "k" || cl[0].Partition != 3 || cl[0].Store != "ts" {
		t.Fatalf("tombstone changelog: %+v", cl)
	}
}

func TestHeadersAwareKeyValue(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.TimestampedKeyValueStore(pipeline.StoreSpec{Name: "h", Type: pipeline.TimestampedKeyValueStoreType, Headers: true, Logged: true}, 0)
	noErr(t, err)
	headers := pipeline.Headers{{Key: "a", Value: []byte("b")}}
	noErr(t, s.PutWithHeaders([]byte("k"), []byte("v"), 1, headers))
	noErr(t, s.Put([]byte("n"), []byte("w"), 2))
	commit(t, db)
	raw, err := db.ldb.db.Get(append(dataPrefix(s.p.id, 0), 'k'), nil)
	noErr(t, err)
	if !bytes.Equal(raw, []byte{0x0a, 0x02, 0x02, 'a', 0x02, 'b', 0, 0, 0, 0, 0, 0, 0, 1, 'v'}) {
		t.Fatalf("stored value %x", raw)
	}
	raw, err = db.ldb.db.Get(append(dataPrefix(s.p.id, 0), 'n'), nil)
	noErr(t, err)
	if !bytes.Equal(raw, []byte{0x00, 0, 0, 0, 0, 0, 0, 0, 2, 'w'}) {
		t.Fatalf("stored value without headers %x", raw)
	}
	v, ts, h, err := s.GetWithHeaders([]byte("k"))
	if err != nil || string(v) != "v" || ts != 1 || len(h) != 1 || h[0].Key != "a" || string(h[0].Value) != "b" {
		t.Fatalf("get: %q %d %+v %v", v, ts, h, err)
	}
	if v, ts, _ := s.View(ReadCommitted).Get([]byte("n")); string(v) != "w" || ts != 2 {
		t.Fatalf("get n: %q %d", v, ts)
	}
	it := s.All(false)
	defer it.Close()
	if !it.Next() {
		t.Fatal("empty iteration")
	}
	if h, err := it.Headers(); err != nil || len(h) != 1 || string(it.Value()) != "v" {
		t.Fatalf("iterator headers %+v %v", h, err)
	}
}

func TestChangelogCapture(t *testing.T) {
	db, _ := openDB(t)
	logged, err := db.KeyValueStore(pipeline.StoreSpec{Name: "logged", Type: pipeline.KeyValueStoreType, Logged: true}, 1)
	noErr(t, err)
	quiet, err := db.KeyValueStore(pipeline.StoreSpec{Name: "quiet", Type: pipeline.KeyValueStoreType}, 1)
	noErr(t, err)
	key := []byte("k")
	noErr(t, logged.Put(key, []byte("1"), 10))
	key[0] = 'x' // callers reuse buffers: the record must not change
	noErr(t, logged.Put([]byte("k"), []byte("2"), 11))
	noErr(t, quiet.Put([]byte("k"), []byte("q"), 11))
	noErr(t, logged.Delete([]byte("k"), 12))
	cl := db.Changelog()
	want := []struct {
		key, value string
		null       bool
		ts         int64
	}{{"k", "1", false, 10}, {"k", "2", false, 11}, {"k", "", true, 12}}
	if len(cl) != len(want) {
		t.Fatalf("changelog %+v", cl)
	}
	for i, w := range want {
		r := cl[i]
		if r.Store != "logged" || r.Partition != 1 || string(r.Key) != w.key || string(r.Value) != w.value || (r.Value == nil) != w.null || r.Timestamp != w.ts {
			t.Errorf("record %d = %+v, want %+v", i, r, w)
		}
	}
	commit(t, db)
	if len(db.Changelog()) != 0 {
		t.Fatal("commit kept changelog records")
	}
}

// TakeChangelog hands out each record of the epoch once, in write order, and starts again
// with the next epoch after a commit or an abort.
func TestTakeChangelogHandsOutEachRecordOnce(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.KeyValueStore(pipeline.StoreSpec{Name: "logged", Type: pipeline.KeyValueStoreType, Logged: true}, 0)
	noErr(t, err)
	keys := func(recs []ChangelogRecord) (out string) {
		for _, r := range recs {
			out += string(r.Key)
		}
		return out
	}
	noErr(t, s.Put([]byte("a"), []byte("1"), 0))
	noErr(t, s.Put([]byte("b"), []byte("1"), 0))
	if got := keys(db.TakeChangelog()); got != "ab" {
		t.Fatalf("first take %q, want ab", got)
	}
	noErr(t, s.Put([]byte("c"), []byte("1"), 0))
	if got := keys(db.TakeChangelog()); got != "c" {
		t.Fatalf("second take %q, want c", got)
	}
	if got := keys(db.TakeChangelog()); got != "" {
		t.Fatalf("third take %q, want nothing", got)
	}
	if got := keys(db.Changelog()); got != "abc" {
		t.Fatalf("the epoch's changelog %q, want abc", got)
	}
	db.Abort()
	noErr(t, s.Put([]byte("d"), []byte("1"), 0))
	if got := keys(db.TakeChangelog()); got != "d" {
		t.Fatalf("take after an abort %q, want d", got)
	}
	commit(t, db)
	noErr(t, s.Put([]byte("e"), []byte("1"), 0))
	if got := keys(db.TakeChangelog()); got != "e" {
		t.Fatalf("take after a commit %q, want e", got)
	}
}

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

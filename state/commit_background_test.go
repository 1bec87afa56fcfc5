package state

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state/faultdisk"
)

// While a background commit is being written, READ_UNCOMMITTED reads see the next epoch's
// writes over the sealed epoch's over LevelDB (point reads, iterators both ways, metadata),
// and READ_COMMITTED reads the last written commit, its offsets and stream time included;
// once written, the sealed epoch is committed state.
func TestCommitInBackgroundReadsTheSealedEpochUntilWritten(t *testing.T) {
	gate := &faultdisk.Gate{}
	opts := testOptions
	opts.WrapStorage = gate.Wrap
	db, err := Open(t.TempDir(), opts)
	noErr(t, err)
	defer db.Close()
	defer gate.Reopen() // before Close, which waits for the write
	kv, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType, Logged: true}, 0)
	noErr(t, err)
	w, err := db.WindowStore(windowSpec(), 0)
	noErr(t, err)
	cp := ChangelogPartition{Store: "kv"}
	for _, k := range []string{"a", "c", "d"} {
		noErr(t, kv.Put([]byte(k), []byte(k+"1"), 0))
	}
	_, err = w.Put([]byte("w"), 10, []byte("w1"), 10)
	noErr(t, err)
	noErr(t, db.Commit(map[ChangelogPartition]int64{cp: 1}))

	// The sealed epoch: a and b put, c deleted, metadata, a later window.
	noErr(t, kv.Put([]byte("a"), []byte("a2"), 0))
	noErr(t, kv.Put([]byte("b"), []byte("b2"), 0))
	noErr(t, kv.Delete([]byte("c"), 0))
	noErr(t, db.PutMeta("kv", 0, "m", []byte("m2")))
	_, err = w.Put([]byte("w"), 20, []byte("w2"), 20)
	noErr(t, err)
	gate.Close()
	c, err := db.CommitInBackground(offsetsOf(map[ChangelogPartition]int64{cp: 2}))
	noErr(t, err)
	<-gate.Held()
	if db.UncommittedBytes() != 0 {
		t.Fatalf("%d uncommitted bytes after the seal, want 0", db.UncommittedBytes())
	}

	// The next epoch: d put over LevelDB's, b deleted over the sealed put.
	noErr(t, kv.Put([]byte("d"), []byte("d3"), 0))
	noErr(t, kv.Delete([]byte("b"), 0))
	ru, rc := kv.View(ReadUncommitted), kv.View(ReadCommitted)
	wantKV := func(view KeyValueView, want string) {
		t.Helper()
		var got []string
		for _, k := range []string{"a", "b", "c", "d"} {
			v, err := view.Get([]byte(k))
			noErr(t, err)
			got = append(got, fmt.Sprintf("%s=%s", k, v))
		}
		if s := fmt.Sprint(got); s != want {
			t.Fatalf("%s Get: %s, want %s", view.Level(), s, want)
		}
		for _, reverse := range []bool{false, true} {
			it := view.All(reverse)
			var scan []string
			for it.Next() {
				scan = append(scan, fmt.Sprintf("%s=%s", it.Key(), it.Value()))
			}
			noErr(t, it.Err())
			it.Close()
			if reverse {
				for i, j := 0, len(scan)-1; i < j; i, j = i+1, j-1 {
					scan[i], scan[j] = scan[j], scan[i]
				}
			}
			if s := fmt.Sprint(scan); s != fmt.Sprint(nonEmpty(got)) {
				t.Fatalf("%s All(reverse %v): %s, want %s", view.Level(), reverse, s, nonEmpty(got))
			}
		}
	}
	wantKV(ru, "[a=a2 b= c= d=d3]")
	wantKV(rc, "[a=a1 b= c=c1 d=d1]")
	if m, err := db.Meta("kv", 0, "m"); err != nil || string(m) != "m2" {
		t.Fatalf("Meta = %q, %v; want the sealed m2", m, err)
	}
	if off, _, err := db.ChangelogOffset("kv", 0); err != nil || off != 1 {
		t.Fatalf("changelog offset %d, %v while the commit is written; want the last written 1", off, err)
	}
	if got := windows(t, w.View(ReadUncommitted).Fetch([]byte("w"), 0, 100, false)); fmt.Sprint(got) != "[w[10,20)=w1@10 w[20,30)=w2@20]" {
		t.Fatalf("READ_UNCOMMITTED windows %v", got)
	}
	if got := windows(t, w.View(ReadCommitted).Fetch([]byte("w"), 0, 100, false)); fmt.Sprint(got) != "[w[10,20)=w1@10]" {
		t.Fatalf("READ_COMMITTED windows %v", got)
	}

	gate.Reopen()
	noErr(t, c.Wait())
	wantKV(ru, "[a=a2 b= c= d=d3]")
	wantKV(rc, "[a=a2 b=b2 c= d=d1]")
	if off, _, err := db.ChangelogOffset("kv", 0); err != nil || off != 2 {
		t.Fatalf("changelog offset %d, %v after the write; want 2", off, err)
	}
	if got := windows(t, w.View(ReadCommitted).Fetch([]byte("w"), 0, 100, false)); fmt.Sprint(got) != "[w[10,20)=w1@10 w[20,30)=w2@20]" {
		t.Fatalf("READ_COMMITTED windows after the write %v", got)
	}
	// An aborted next epoch goes back to the sealed one, now committed.
	db.Abort()
	wantKV(ru, "[a=a2 b=b2 c= d=d1]")
	if m, err := db.Meta("kv", 0, "m"); err != nil || string(m) != "m2" {
		t.Fatalf("Meta = %q, %v after the write; want m2", m, err)
	}
}

// offsetsOf is CommitInBackground's argument giving offsets.
func offsetsOf(offsets map[ChangelogPartition]int64) func() (map[ChangelogPartition]int64, error) {
	return func() (map[ChangelogPartition]int64, error) { return offsets, nil }
}

// nonEmpty drops the absent keys of a "k=v" list.
func nonEmpty(kvs []string) []string {
	var out []string
	for _, s := range kvs {
		if s[len(s)-1] != '=' {
			out = append(out, s)
		}
	}
	return out
}

// A background commit that meets a full disk applies nothing: its error comes from Wait
// and from every later commit, READ_UNCOMMITTED still reads the sealed epoch, and Abort
// drops it and the next epoch, back to the last written commit.
func TestCommitInBackgroundOnAFullDiskAppliesNothing(t *testing.T) {
	dir := t.TempDir()
	disk := faultdisk.New(dir)
	opts := testOptions
	opts.WrapStorage = disk.Wrap
	db, err := Open(dir, opts)
	noErr(t, err)
	defer db.Close()
	a0, err := db.KeyValueStore(diskFullSpecs[0], 0)
	noErr(t, err)
	put := func(e int) {
		for k := range 4 {
			noErr(t, a0.Put([]byte(fmt.Sprintf("k%d", k)), []byte(fmt.Sprintf("e%d", e)), 0))
		}
	}
	offsets := func(e int) map[ChangelogPartition]int64 {
		return map[ChangelogPartition]int64{{Store: "a"}: int64(100 * e)}
	}
	put(1)
	noErr(t, db.Commit(offsets(1)))
	put(2)
	disk.Fill(0)
	c, err := db.CommitInBackground(offsetsOf(offsets(2)))
	noErr(t, err)
	werr := c.Wait()
	if !errors.Is(werr, syscall.ENOSPC) {
		t.Fatalf("Wait = %v, want ENOSPC", werr)
	}
	if v, err := a0.Get([]byte("k0")); err != nil || string(v) != "e2" {
		t.Fatalf("READ_UNCOMMITTED k0 = %q, %v after the failed write; want the sealed e2", v, err)
	}
	if v, err := a0.View(ReadCommitted).Get([]byte("k0")); err != nil || string(v) != "e1" {
		t.Fatalf("READ_COMMITTED k0 = %q, %v; want e1", v, err)
	}
	put(3)
	if err := db.Commit(offsets(3)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Commit after the failed write = %v, want its ENOSPC", err)
	}
	if _, err := db.CommitInBackground(offsetsOf(offsets(3))); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("CommitInBackground after the failed write = %v, want its ENOSPC", err)
	}
	if err := db.Restore(diskFullSpecs[0], 1, nil, 5); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Restore after the failed write = %v, want its ENOSPC", err)
	}
	db.Abort()
	for _, level := range []IsolationLevel{ReadUncommitted, ReadCommitted} {
		if v, err := a0.View(level).Get([]byte("k0")); err != nil || string(v) != "e1" {
			t.Fatalf("%s k0 = %q, %v after Abort; want the last written e1", level, v, err)
		}
	}
	if off, _, err := db.ChangelogOffset("a", 0); err != nil || off != 100 {
		t.Fatalf("changelog offset %d, %v; want epoch 1's", off, err)
	}
}

// The changelog offsets of a background commit come from its goroutine, before the write:
// the write carries them, and when they cannot be had (a changelog record failed) nothing
// is applied and the error is the commit's.
func TestCommitInBackgroundTakesItsOffsetsBeforeTheWrite(t *testing.T) {
	db, _ := openDB(t)
	kv, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType, Logged: true}, 0)
	noErr(t, err)
	noErr(t, kv.Put([]byte("a"), []byte("1"), 0))
	c, err := db.CommitInBackground(offsetsOf(map[ChangelogPartition]int64{{Store: "kv"}: 3}))
	noErr(t, err)
	noErr(t, c.Wait())
	if off, ok, err := db.ChangelogOffset("kv", 0); err != nil || !ok || off != 3 {
		t.Fatalf("changelog offset %d, %v, %v; want 3", off, ok, err)
	}
	noErr(t, kv.Put([]byte("a"), []byte("2"), 0))
	lost := errors.New("changelog record lost")
	c, err = db.CommitInBackground(func() (map[ChangelogPartition]int64, error) { return nil, lost })
	noErr(t, err)
	if err := c.Wait(); !errors.Is(err, lost) {
		t.Fatalf("Wait = %v, want the offsets' error", err)
	}
	if err := db.Commit(nil); !errors.Is(err, lost) {
		t.Fatalf("Commit after it = %v, want the offsets' error", err)
	}
	if got := kvGet(t, kv.View(ReadCommitted), "a"); got != "1" {
		t.Fatalf("READ_COMMITTED a = %s, want 1", got)
	}
	db.Abort()
	if got := kvGet(t, kv.KeyValueView, "a"); got != "1" {
		t.Fatalf("a = %s after Abort, want 1", got)
	}
	if off, _, err := db.ChangelogOffset("kv", 0); err != nil || off != 3 {
		t.Fatalf("changelog offset %d, %v; want 3", off, err)
	}
	noErr(t, kv.Put([]byte("a"), []byte("3"), 0))
	noErr(t, db.Commit(nil))
	if got := kvGet(t, kv.View(ReadCommitted), "a"); got != "3" {
		t.Fatalf("a = %s after the next commit, want 3", got)
	}
}

// TestCommitInBackgroundAdvancesCommittedStreamTimeOnceWritten: READ_COMMITTED reads go by
// the sealed epoch's stream time as soon as its write is done, not only from the next
// commit on. The second epoch moves stream time (the latest window start) 100 → 120,
// expiring the window at 10 (retention 100) without making a sweep due, so LevelDB still
// holds it.
func TestCommitInBackgroundAdvancesCommittedStreamTimeOnceWritten(t *testing.T) {
	db, _ := openDB(t)
	w, err := db.WindowStore(windowSpec(), 0)
	noErr(t, err)
	_, err = w.Put([]byte("w"), 10, []byte("w1"), 10)
	noErr(t, err)
	_, err = w.Put([]byte("y"), 100, []byte("y1"), 100)
	noErr(t, err)
	noErr(t, db.Commit(nil))
	rc := w.View(ReadCommitted)
	if v, _, err := rc.Get([]byte("w"), 10); err != nil || string(v) != "w1" {
		t.Fatalf("READ_COMMITTED Get of window 10 at stream time 100: %q, %v; want w1", v, err)
	}

	_, err = w.Put([]byte("x"), 120, []byte("x1"), 120)
	noErr(t, err)
	c, err := db.CommitInBackground(offsetsOf(nil))
	noErr(t, err)
	noErr(t, c.Wait())
	if v, _, err := rc.Get([]byte("w"), 10); err != nil || v != nil {
		t.Fatalf("READ_COMMITTED Get of window 10 once the commit at stream time 120 is written: %q, %v; want nothing (expired)", v, err)
	}
	if v, _, err := rc.Get([]byte("x"), 120); err != nil || string(v) != "x1" {
		t.Fatalf("READ_COMMITTED Get of window 120 once written: %q, %v; want x1", v, err)
	}
}

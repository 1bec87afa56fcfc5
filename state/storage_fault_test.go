package state

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state/faultdisk"
)

var diskFullSpecs = []pipeline.StoreSpec{
	{Name: "a", Type: pipeline.KeyValueStoreType, Logged: true},
	{Name: "b", Type: pipeline.TimestampedKeyValueStoreType, Logged: true},
}

// diskFullOffsets are the changelog offsets committed with epoch e.
func diskFullOffsets(e int) map[ChangelogPartition]int64 {
	return map[ChangelogPartition]int64{
		{Store: "a", Partition: 0}: int64(100 * e),
		{Store: "a", Partition: 1}: int64(100*e + 1),
		{Store: "b", Partition: 0}: int64(100*e + 2),
	}
}

// diskFullContents is what the stores hold after epoch e: every epoch rewrites all keys.
func diskFullContents(e int) []string {
	var out []string
	for p := range 2 {
		for k := p; k < 4; k += 2 {
			out = append(out, fmt.Sprintf("a/%d/k%d=e%d", p, k, e))
		}
	}
	for k := range 4 {
		out = append(out, fmt.Sprintf("b/0/k%d=e%d@%d", k, e, e))
	}
	return out
}

// readDiskFullStores renders the stores at level as diskFullContents does, and checks the
// committed changelog offsets are epoch e's.
func readDiskFullStores(t *testing.T, db *DB, level IsolationLevel, e int) []string {
	t.Helper()
	var out []string
	for p := int32(0); p < 2; p++ {
		s, err := db.KeyValueStore(diskFullSpecs[0], p)
		noErr(t, err)
		it := s.View(level).All(false)
		for it.Next() {
			out = append(out, fmt.Sprintf("a/%d/%s=%s", p, it.Key(), it.Value()))
		}
		noErr(t, it.Err())
		it.Close()
	}
	s, err := db.TimestampedKeyValueStore(diskFullSpecs[1], 0)
	noErr(t, err)
	it := s.View(level).All(false)
	for it.Next() {
		out = append(out, fmt.Sprintf("b/0/%s=%s@%d", it.Key(), it.Value(), it.Timestamp()))
	}
	noErr(t, it.Err())
	it.Close()
	for cp, want := range diskFullOffsets(e) {
		got, ok, err := db.ChangelogOffset(cp.Store, cp.Partition)
		noErr(t, err)
		if !ok || got != want {
			t.Fatalf("changelog offset of %s/%d = %d (%v), want epoch %d's %d", cp.Store, cp.Partition, got, ok, e, want)
		}
	}
	return out
}

// fillDuringCommits commits two epochs, leaves left bytes of free space, and commits
// epochs until one fails, which must fail on the full disk and leave the open database
// at the last committed epoch. It then frees space and opens the directory again: it
// returns that open's error, or checks that the database holds the last committed epoch.
func fillDuringCommits(t *testing.T, left int64) (reopenErr error) {
	dir := t.TempDir()
	disk := faultdisk.New(dir)
	opts := testOptions
	opts.WrapStorage = disk.Wrap
	db, err := Open(dir, opts)
	noErr(t, err)
	a0, err := db.KeyValueStore(diskFullSpecs[0], 0)
	noErr(t, err)
	a1, err := db.KeyValueStore(diskFullSpecs[0], 1)
	noErr(t, err)
	b, err := db.TimestampedKeyValueStore(diskFullSpecs[1], 0)
	noErr(t, err)
	var commitErr error
	e := 1
	for ; e <= 50; e++ {
		if e == 3 {
			disk.Fill(left)
		}
		v := []byte(fmt.Sprintf("e%d", e))
		for k := range 4 {
			key := []byte(fmt.Sprintf("k%d", k))
			noErr(t, []*KeyValueStore{a0, a1}[k%2].Put(key, v, 0))
			noErr(t, b.Put(key, v, int64(e)))
		}
		if commitErr = db.Commit(diskFullOffsets(e)); commitErr != nil {
			break
		}
	}
	committed := e - 1
	if commitErr == nil {
		t.Fatalf("%d epochs committed with %d bytes of free space", committed, left)
	}
	if !errors.Is(commitErr, syscall.ENOSPC) || !strings.Contains(commitErr.Error(), dir) ||
		!strings.Contains(commitErr.Error(), "no space left on device") {
		t.Fatalf("Commit = %v, want ENOSPC naming %s", commitErr, dir)
	}
	equal(t, readDiskFullStores(t, db, ReadCommitted, committed), diskFullContents(committed))
	noErr(t, db.Close())
	disk.FreeSpace()
	db2, err := Open(dir, opts)
	if err != nil {
		return err
	}
	defer db2.Close()
	equal(t, readDiskFullStores(t, db2, ReadUncommitted, committed), diskFullContents(committed))
	// With the space back, the next commit works.
	s, err := db2.KeyValueStore(diskFullSpecs[0], 0)
	noErr(t, err)
	noErr(t, s.Put([]byte("after"), []byte("freed"), 0))
	noErr(t, db2.Commit(nil))
	return nil
}

// A commit that meets a full disk fails with ENOSPC and leaves the last committed epoch
// intact, wherever in the commit's journal record the space ran out. When none of the
// record reached the disk, or less than its header, the directory opens again at that
// epoch, data and changelog offsets together. When part of it did, the strict journal
// check reports the torn record as ErrCorrupt (the agent then rebuilds from the
// changelogs); a half-written epoch is never read back.
func TestDiskFullCommitKeepsTheLastCommittedEpoch(t *testing.T) {
	var clean, corrupt int
	for left := int64(0); left < 300; left += 9 {
		switch err := fillDuringCommits(t, left); {
		case err == nil:
			clean++
		case errors.Is(err, ErrCorrupt):
			corrupt++
		default:
			t.Fatalf("%d bytes free: reopen after freeing space = %v", left, err)
		}
	}
	t.Logf("reopened cleanly %d times, corrupt %d times", clean, corrupt)
	if clean == 0 || corrupt == 0 {
		t.Fatalf("reopened cleanly %d times, corrupt %d times: want the fill points to cover both", clean, corrupt)
	}
}

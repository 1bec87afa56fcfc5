package state

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// WriteFileSynced replaces a crash's leftover temporary file, a FIFO even, without opening
// it, and leaves none behind when the write fails (here the rename, onto a directory that
// is not empty).
func TestWriteFileSyncedLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "f.tmp"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileSynced(dir, "f", []byte("whole"), 0o640); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "f")); err != nil || string(b) != "whole" {
		t.Fatalf("f holds %q %v", b, err)
	}
	if st, err := os.Stat(filepath.Join(dir, "f")); err != nil || st.Mode().Perm()&^0o640 != 0 {
		t.Fatalf("f's mode %v %v, want no more than 0640", st.Mode(), err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "d", "in"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileSynced(dir, "d", []byte("x"), 0o640); err == nil {
		t.Fatal("replacing a directory that is not empty succeeded")
	}
	for _, name := range []string{"f.tmp", "d.tmp"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is left behind (%v)", name, err)
		}
	}
}

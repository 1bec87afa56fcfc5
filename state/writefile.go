package state

import (
	"errors"
	"os"
	"path/filepath"
)

// WriteFileSynced writes name in dir through a temporary file (name.tmp), renamed once
// synced, and syncs dir, so that name is either whole or absent after a crash; the
// temporary file is never left behind on an error. It is created anew (O_EXCL, after a
// crash's leftover is removed): opening whatever else stood at its name for writing, a
// FIFO, would wait for a reader.
func WriteFileSynced(dir, name string, b []byte, perm os.FileMode) error {
	tmp := filepath.Join(dir, name+".tmp")
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

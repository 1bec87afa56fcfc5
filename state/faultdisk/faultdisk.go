// Package faultdisk is the disk of fault-injection tests under a LevelDB database, in the
// state tests and under a running agent alike: a disk that fills up (Disk, through
// state.Options.WrapStorage) and damaged files (Garble, GarbleBlock, GarbleFooter).
package faultdisk

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"github.com/syndtr/goleveldb/leveldb/storage"
)

// Disk is a disk that can run full: state.Options.WrapStorage = Wrap puts the database's
// files on it.
type Disk struct {
	dir string
	// free is the number of bytes writes may still add; negative means unlimited.
	free atomic.Int64
}

// New returns a disk with unlimited space for the database in dir; dir only names the files
// in the errors, as the operating system's errors do.
func New(dir string) *Disk {
	d := &Disk{dir: dir}
	d.free.Store(-1)
	return d
}

// Fill leaves left bytes of free space for the database's files (journals, tables,
// manifests): the write that crosses it writes what fits and fails with ENOSPC, as write(2)
// does on a full disk, and so does every later write.
func (d *Disk) Fill(left int64) { d.free.Store(max(left, 0)) }

// FreeSpace makes space unlimited again. A goleveldb database that hit the full disk still
// fails its writes (its journal writer keeps the error) until it is reopened.
func (d *Disk) FreeSpace() { d.free.Store(-1) }

// take reserves up to n bytes and returns how many it got.
func (d *Disk) take(n int) int {
	for {
		free := d.free.Load()
		if free < 0 {
			return n
		}
		got := min(int64(n), free)
		if d.free.CompareAndSwap(free, free-got) {
			return int(got)
		}
	}
}

func (d *Disk) errFull(fd storage.FileDesc) error {
	return &os.PathError{Op: "write", Path: filepath.Join(d.dir, fd.String()), Err: syscall.ENOSPC}
}

// Wrap puts a database's storage on the disk.
func (d *Disk) Wrap(s storage.Storage) storage.Storage { return &faultStorage{s, d} }

type faultStorage struct {
	storage.Storage
	disk *Disk
}

func (s *faultStorage) Create(fd storage.FileDesc) (storage.Writer, error) {
	w, err := s.Storage.Create(fd)
	if err != nil {
		return nil, err
	}
	return &faultWriter{w, s.disk, fd}, nil
}

type faultWriter struct {
	storage.Writer
	disk *Disk
	fd   storage.FileDesc
}

func (w *faultWriter) Write(p []byte) (int, error) {
	got := w.disk.take(len(p))
	n, err := w.Writer.Write(p[:got])
	if err == nil && got < len(p) {
		err = w.disk.errFull(w.fd)
	}
	return n, err
}

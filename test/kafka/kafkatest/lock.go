package kafkatest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockFile takes an flock(2) on path (created if missing), shared or exclusive, waiting as
// long as it takes. Each call opens its own descriptor, so two goroutines of one process
// exclude each other as two processes do.
func lockFile(path string, exclusive bool) (unlock func(), err error) {
	return lockFileWithin(path, exclusive, 0)
}

// lockFileWithin is lockFile giving up after wait (0: never), with an error saying who
// might hold the lock.
func lockFileWithin(path string, exclusive bool, wait time.Duration) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: lock: %w", err)
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if wait == 0 {
		err = flock(f, how)
	} else {
		deadline := time.Now().Add(wait)
		for {
			err = flock(f, how|syscall.LOCK_NB)
			if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("kafkatest: lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil // closing the descriptor releases the lock
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// lockUse takes the use lock of the shared cluster name in dir: shared by the tests that
// only use the cluster, exclusive for one that kills or pauses its nodes. An exclusive
// taker first announces itself on a second lock (name.intent) that the shared takers pass
// through on their way in, so that tests arriving after it wait behind it instead of
// keeping the cluster busy for ever (flock itself has no queue).
func lockUse(dir, name string, exclusive bool, wait time.Duration) (unlock func(), err error) {
	intent, err := lockFileWithin(filepath.Join(dir, name+".intent"), exclusive, wait)
	if err != nil {
		return nil, err
	}
	defer intent()
	return lockFileWithin(filepath.Join(dir, name+".use"), exclusive, wait)
}

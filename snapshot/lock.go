package snapshot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockName is the lock file in the data dir. Two main controls writing one
// log would corrupt it, so Open takes an exclusive flock on this file; the
// kernel drops it when the process dies, even by kill -9. ReadOnly opens
// take no lock: the inspector may read a copy, or the live dir.
const lockName = "lock"

// ErrLocked is returned by Open when another process holds the data dir.
var ErrLocked = errors.New("data dir is in use by another process")

func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, filePerm)
	if err != nil {
		return nil, fmt.Errorf("cannot open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", dir, ErrLocked)
		}
		return nil, fmt.Errorf("cannot lock %s: %w", dir, err)
	}
	return f, nil
}

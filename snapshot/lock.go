package snapshot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockName is the lock file in the data dir. Two main controls writing one
// log would corrupt it, so Open takes exclusive flocks; the kernel drops
// them when the process dies, even by kill -9. ReadOnly opens take no
// lock: the inspector may read a copy, or the live dir.
//
// The flock that counts is on the directory itself: a lock file can be
// deleted (it looks like a stale pid file after a kill -9) and a new one
// at the same path is another inode, which a second main control would
// lock freely. The directory cannot go away while it holds our log. The
// file is still created and locked, so that a main control built before
// the directory lock also sees the dir as taken.
const lockName = "lock"

// ErrLocked is returned by Open when another process holds the data dir.
var ErrLocked = errors.New("data dir is in use by another process")

// dirLock holds the data dir's flocks until Close.
type dirLock struct {
	dir, file *os.File
}

func lockDir(dir string) (*dirLock, error) {
	d, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot open data dir %s to lock it: %w", dir, err)
	}
	if err := flock(d, dir); err != nil {
		d.Close()
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, filePerm)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("cannot open lock file: %w", err)
	}
	if err := flock(f, dir); err != nil {
		f.Close()
		d.Close()
		return nil, err
	}
	return &dirLock{dir: d, file: f}, nil
}

func flock(f *os.File, dir string) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		return fmt.Errorf("%s: %w", dir, ErrLocked)
	default:
		return fmt.Errorf("cannot lock %s: %w", dir, err)
	}
}

// Close releases both flocks.
func (l *dirLock) Close() {
	l.file.Close()
	l.dir.Close()
}

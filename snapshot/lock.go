package snapshot

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
)

// lockName is the lock file in the data dir.
// Two main controls writing one log would corrupt it.
// So Open takes exclusive flocks.
// The kernel drops them when the process dies, even by kill -9.
// ReadOnly opens take no lock, so the inspector may read a copy or the live dir.
//
// The flock that counts is on the directory itself.
// A lock file can be deleted, as it looks like a stale pid file after a kill -9.
// A new one at the same path is another inode.
// A second main control would lock that one freely.
// The directory cannot go away while it holds our log.
// The file is still created and locked.
// So a main control built before the directory lock also sees the dir as taken.
const lockName = "lock"

// ErrLocked is returned by Open when another process holds the data dir.
var ErrLocked = errors.New("data dir is in use by another process")

// dirLock holds the data dir's flocks until Close.
type dirLock struct {
	dir, file *os.File
}

// lockDir takes the data dir's flocks.
// The directory itself may not take a flock.
// NFS emulates flock with POSIX locks, which need a file open for writing (EBADF).
// Some file systems refuse it.
// Then it warns and keeps the lock file's flock alone, as before the directory lock.
func lockDir(dir string, log *slog.Logger) (*dirLock, error) {
	d, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot open data dir %s to lock it: %w", dir, err)
	}
	if err := flockDir(d, dir); err != nil {
		d.Close()
		if !unlockable(err) {
			return nil, err
		}
		d = nil
		log.Warn("cannot lock the data dir itself (a network file system?): only its lock file keeps a second main control out, so do not delete it while one runs",
			"dir", dir, "err", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, filePerm)
	if err == nil {
		err = flock(f, dir)
		if err != nil {
			f.Close()
		}
	} else {
		err = fmt.Errorf("cannot open lock file: %w", err)
	}
	if err != nil {
		if d != nil {
			d.Close()
		}
		return nil, err
	}
	return &dirLock{dir: d, file: f}, nil
}

// flockDir locks the directory.
// It is a variable so that tests can play a file system that refuses it.
var flockDir = flock

// unlockable reports whether a flock failed because the file system does
// not take it, not because another process holds it.
func unlockable(err error) bool {
	return errors.Is(err, syscall.EBADF) || errors.Is(err, syscall.ENOLCK) ||
		errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.EINVAL)
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

// Close releases the flocks.
func (l *dirLock) Close() error {
	err := l.file.Close()
	if l.dir != nil {
		if derr := l.dir.Close(); err == nil {
			err = derr
		}
	}
	return err
}

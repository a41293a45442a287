package snapshot

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"
)

// FS is the file layer under the Store.
// It exists so tests can inject faults (ENOSPC, EIO). Production code uses OS.
//
// Implementations must be safe for concurrent use.
// Three goroutines use it at the same time.
// The writer goroutine does segment writes, fsyncs and rotation.
// The WriteSnapshot caller writes snapshot files and deletes.
// The Open/Replay caller uses it too.
// Paths are passed as given to Open, joined with filepath.Join.
type FS interface {
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	Remove(name string) error
	Rename(oldpath, newpath string) error
	ReadDir(name string) ([]fs.DirEntry, error)
	MkdirAll(path string, perm fs.FileMode) error
	// SyncDir makes the directory's entries durable.
	// It opens it read-only, calls Sync, and closes it.
	SyncDir(path string) error
	// CreateAtomic starts a file that appears at path whole or not at all.
	// Its bytes go to a temporary file in path's directory.
	// That file's name starts with ".".
	// CloseAtomicallyReplace fsyncs, closes and renames it to path.
	// The directory is not fsynced, so callers do that.
	CreateAtomic(path string, perm fs.FileMode) (Pending, error)
}

// Pending is a file being written by FS.CreateAtomic.
// *renameio.PendingFile implements it.
type Pending interface {
	io.Writer
	// Name is the temporary file's path.
	Name() string
	// CloseAtomicallyReplace fsyncs and closes the temporary file, then
	// renames it to the target path.
	CloseAtomicallyReplace() error
	// Cleanup closes and removes the temporary file, unless it replaced
	// the target already.
	Cleanup() error
}

// File is an open file of an FS. *os.File implements it.
type File interface {
	io.Reader
	io.Writer
	io.ReaderAt
	io.Seeker
	io.Closer
	Sync() error
	Truncate(size int64) error
	Stat() (fs.FileInfo, error)
	Name() string
}

// OS is the real file system.
var OS FS = osFS{}

type osFS struct{}

var (
	_ FS      = osFS{}
	_ File    = (*os.File)(nil)
	_ Pending = (*renameio.PendingFile)(nil)
)

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // not a typed nil in an interface
	}
	return f, nil
}

func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (osFS) ReadDir(name string) ([]fs.DirEntry, error)   { return os.ReadDir(name) }
func (osFS) MkdirAll(path string, perm fs.FileMode) error { return os.MkdirAll(path, perm) }

func (osFS) SyncDir(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// CreateAtomic uses renameio, with the temporary file beside the target.
// That way a rename never crosses file systems, and startup finds leftovers there.
func (osFS) CreateAtomic(path string, perm fs.FileMode) (Pending, error) {
	p, err := renameio.NewPendingFile(path, renameio.WithTempDir(filepath.Dir(path)), renameio.WithPermissions(perm))
	if err != nil {
		return nil, err // not a typed nil in an interface
	}
	return p, nil
}

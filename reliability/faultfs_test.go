package reliability_test

import (
	"io/fs"
	"os"
	"sync"

	"github.com/apollo11/apollo11/snapshot"
)

// fullFS is the real file system with an injectable full disk: once
// Fill is called, every file opened for writing (log segments and
// snapshots alike) takes only budget more bytes, then writes fail with
// ENOSPC (a short write first, as on a real full disk); FailSyncs makes
// fsyncs fail instead. Heal ends both. Files opened before Fill are
// affected too: the fault is checked on each call.
type fullFS struct {
	snapshot.FS
	mu      sync.Mutex
	budget  int64 // bytes still writable; < 0: unlimited
	err     error // returned by writes past the budget
	syncErr error // returned by Sync while set
	fails   int   // calls that failed
}

var _ snapshot.FS = (*fullFS)(nil)

func newFullFS() *fullFS { return &fullFS{FS: snapshot.OS, budget: -1} }

// Fill lets budget more bytes be written, then fails writes with err.
func (f *fullFS) Fill(budget int64, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.budget, f.err = budget, err
}

// FailSyncs makes every fsync fail with err.
func (f *fullFS) FailSyncs(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.syncErr = err
}

// Heal ends every injected fault.
func (f *fullFS) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.budget, f.syncErr = -1, nil
}

// Fails returns the number of failed calls so far.
func (f *fullFS) Fails() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fails
}

func (f *fullFS) OpenFile(name string, flag int, perm fs.FileMode) (snapshot.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return file, err
	}
	return &fullFile{File: file, fs: f}, nil
}

type fullFile struct {
	snapshot.File
	fs *fullFS
}

func (ff *fullFile) Write(p []byte) (int, error) {
	f := ff.fs
	f.mu.Lock()
	allowed, werr := int64(len(p)), error(nil)
	if f.budget >= 0 && f.budget < allowed {
		allowed, werr = f.budget, f.err
		f.fails++
	}
	if f.budget >= 0 {
		f.budget -= allowed
	}
	f.mu.Unlock()
	n, err := ff.File.Write(p[:allowed])
	if err == nil {
		err = werr
	}
	return n, err
}

func (ff *fullFile) Sync() error {
	f := ff.fs
	f.mu.Lock()
	err := f.syncErr
	if err != nil {
		f.fails++
	}
	f.mu.Unlock()
	if err != nil {
		return err
	}
	return ff.File.Sync()
}

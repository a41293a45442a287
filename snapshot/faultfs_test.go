package snapshot_test

import (
	"io/fs"
	"strings"
	"sync"

	"github.com/apollo11/apollo11/snapshot"
)

// faultFS wraps the real file system and makes writes and fsyncs of log
// segments (*.log) fail on demand, like a full or failing disk.
type faultFS struct {
	snapshot.FS
	mu      sync.Mutex
	budget  int64 // bytes still writable to *.log files; < 0: unlimited
	writeEr error // returned by writes past the budget
	syncErr error // returned by Sync of *.log files while set
	fails   int   // failed calls
}

var _ snapshot.FS = (*faultFS)(nil)

func newFaultFS() *faultFS { return &faultFS{FS: snapshot.OS, budget: -1} }

// FailWritesAfter lets n more bytes be written to segments, then fails
// writes with err (a partial write first, like a real full disk).
func (f *faultFS) FailWritesAfter(n int64, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.budget, f.writeEr = n, err
}

// FailSyncs makes every fsync of a segment fail with err.
func (f *faultFS) FailSyncs(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.syncErr = err
}

// Heal ends every injected fault.
func (f *faultFS) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.budget, f.syncErr = -1, nil
}

func (f *faultFS) Fails() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fails
}

func (f *faultFS) OpenFile(name string, flag int, perm fs.FileMode) (snapshot.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return file, err
	}
	return &faultFile{File: file, fs: f}, nil
}

type faultFile struct {
	snapshot.File
	fs *faultFS
}

func (ff *faultFile) Write(p []byte) (int, error) {
	f := ff.fs
	f.mu.Lock()
	allowed, werr := int64(len(p)), error(nil)
	if f.budget >= 0 && f.budget < allowed {
		allowed, werr = f.budget, f.writeEr
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

func (ff *faultFile) Sync() error {
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

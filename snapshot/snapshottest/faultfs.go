// Package snapshottest helps test code that stores through package
// snapshot. FaultFS injects the disk faults that the log must survive,
// such as a full disk or a failing fsync.
package snapshottest

import (
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"

	"github.com/apollo11/apollo11/snapshot"
)

// FaultFS is the real file system with injectable faults on the files
// Match selects. Once FailWritesAfter is called, those files take only n
// more bytes, then writes fail. The first failure is a short write, as on
// a real full disk. FailSyncs makes their fsyncs fail. Heal ends both.
// Files opened before a fault are affected too, as it is checked on each
// call.
//
// Files written whole (CreateAtomic) are still written by the real
// renameio code. The faults wrap it. They fail writes before they reach
// the temporary file. They fail the fsync that starts
// CloseAtomicallyReplace before renameio makes it, so the rename never
// happens. Match sees the target's path.
type FaultFS struct {
	snapshot.FS
	// Match selects the files faults apply to. nil means LogSegments.
	Match func(name string, flag int) bool

	mu      sync.Mutex
	budget  int64         // bytes still writable; < 0: unlimited
	writeEr error         // returned by writes past the budget
	syncErr error         // returned by Sync while set
	fails   int           // calls that failed
	held    chan struct{} // while not nil, Sync waits for it to close
}

var _ snapshot.FS = (*FaultFS)(nil)

// LogSegments selects log segment files (*.log).
func LogSegments(name string, _ int) bool { return strings.HasSuffix(name, ".log") }

// Writable selects every file opened for writing (segments and snapshots).
func Writable(_ string, flag int) bool { return flag&(os.O_WRONLY|os.O_RDWR) != 0 }

// NewFaultFS returns a FaultFS with no fault yet. Its faults apply to the
// files match selects, or to LogSegments if match is nil.
func NewFaultFS(match func(name string, flag int) bool) *FaultFS {
	return &FaultFS{FS: snapshot.OS, Match: match, budget: -1}
}

// FailWritesAfter lets n more bytes be written, then fails writes with err.
func (f *FaultFS) FailWritesAfter(n int64, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.budget, f.writeEr = n, err
}

// FailSyncs makes every fsync fail with err.
func (f *FaultFS) FailSyncs(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.syncErr = err
}

// HoldSyncs makes every fsync wait, as on a disk that has stalled, until
// ReleaseSyncs or Heal.
func (f *FaultFS) HoldSyncs() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held == nil {
		f.held = make(chan struct{})
	}
}

// ReleaseSyncs lets held and later fsyncs go on.
func (f *FaultFS) ReleaseSyncs() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held != nil {
		close(f.held)
		f.held = nil
	}
}

// Heal ends every injected fault.
func (f *FaultFS) Heal() {
	f.ReleaseSyncs()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.budget, f.syncErr = -1, nil
}

// Fails returns the number of failed calls so far.
func (f *FaultFS) Fails() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fails
}

// OpenFile opens through the real file system, wrapping selected files.
func (f *FaultFS) OpenFile(name string, flag int, perm fs.FileMode) (snapshot.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	match := f.Match
	if match == nil {
		match = LogSegments
	}
	if err != nil || !match(name, flag) {
		return file, err
	}
	return &faultFile{File: file, fs: f}, nil
}

type faultFile struct {
	snapshot.File
	fs *FaultFS
}

func (ff *faultFile) Write(p []byte) (int, error) { return ff.fs.write(ff.File, p) }

func (ff *faultFile) Sync() error {
	if err := ff.fs.syncFault(); err != nil {
		return err
	}
	return ff.File.Sync()
}

// CreateAtomic starts an atomic file through the real file system,
// wrapping it when Match selects its target.
func (f *FaultFS) CreateAtomic(path string, perm fs.FileMode) (snapshot.Pending, error) {
	p, err := f.FS.CreateAtomic(path, perm)
	match := f.Match
	if match == nil {
		match = LogSegments
	}
	if err != nil || !match(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC) {
		return p, err
	}
	return &faultPending{Pending: p, fs: f}, nil
}

type faultPending struct {
	snapshot.Pending
	fs *FaultFS
}

func (fp *faultPending) Write(p []byte) (int, error) { return fp.fs.write(fp.Pending, p) }

// CloseAtomicallyReplace fsyncs before it renames. So a failing fsync
// leaves the target as it was.
func (fp *faultPending) CloseAtomicallyReplace() error {
	if err := fp.fs.syncFault(); err != nil {
		return err
	}
	return fp.Pending.CloseAtomicallyReplace()
}

// write passes p to w within the write budget.
func (f *FaultFS) write(w io.Writer, p []byte) (int, error) {
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
	n, err := w.Write(p[:allowed])
	if err == nil {
		err = werr
	}
	return n, err
}

// syncFault waits while fsyncs are held and returns the injected fsync
// error, if any.
func (f *FaultFS) syncFault() error {
	f.mu.Lock()
	err, held := f.syncErr, f.held
	if err != nil {
		f.fails++
	}
	f.mu.Unlock()
	if held != nil {
		<-held
	}
	return err
}

package snapshottest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/apollo11/apollo11/snapshot"
)

// ErrCrashed is what every change fails with once a CrashFS has crashed.
var ErrCrashed = errors.New("simulated crash")

// CrashFS is the real file system that stops after a number of changes,
// as a process killed with SIGKILL does. Every creation, write, fsync,
// rename, removal and truncation counts as a step. Once the budget is
// spent, each of them fails with ErrCrashed and changes nothing. So the
// directory stays as the kill left it. Reads go on working.
type CrashFS struct {
	snapshot.FS
	mu     sync.Mutex
	budget int // steps left; < 0: unlimited
	steps  int // steps taken
	ops    []string
}

var _ snapshot.FS = (*CrashFS)(nil)

// NewCrashFS returns a CrashFS that crashes after n steps, or never if n < 0.
func NewCrashFS(n int) *CrashFS { return &CrashFS{FS: snapshot.OS, budget: n} }

// Steps returns the steps taken so far.
func (c *CrashFS) Steps() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.steps
}

// Ops returns the steps taken, described, in order.
func (c *CrashFS) Ops() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ops...)
}

// step takes one step, or reports the crash.
func (c *CrashFS) step(format string, args ...any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.budget == 0 {
		return ErrCrashed
	}
	if c.budget > 0 {
		c.budget--
	}
	c.steps++
	c.ops = append(c.ops, fmt.Sprintf(format, args...))
	return nil
}

func (c *CrashFS) OpenFile(name string, flag int, perm fs.FileMode) (snapshot.File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC) != 0 {
		if err := c.step("open %s", name); err != nil {
			return nil, err
		}
	}
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &crashFile{File: f, c: c}, nil
}

func (c *CrashFS) Remove(name string) error {
	if err := c.step("remove %s", name); err != nil {
		return err
	}
	return c.FS.Remove(name)
}

func (c *CrashFS) Rename(oldpath, newpath string) error {
	if err := c.step("rename %s %s", oldpath, newpath); err != nil {
		return err
	}
	return c.FS.Rename(oldpath, newpath)
}

func (c *CrashFS) SyncDir(path string) error {
	if err := c.step("syncdir %s", path); err != nil {
		return err
	}
	return c.FS.SyncDir(path)
}

type crashFile struct {
	snapshot.File
	c *CrashFS
}

func (f *crashFile) Write(p []byte) (int, error) {
	if err := f.c.step("write %s %d", f.Name(), len(p)); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *crashFile) Sync() error {
	if err := f.c.step("sync %s", f.Name()); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *crashFile) Truncate(size int64) error {
	if err := f.c.step("truncate %s %d", f.Name(), size); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

// CrashAfter sets the steps left before the crash, or never if n < 0.
func (c *CrashFS) CrashAfter(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.budget = n
}

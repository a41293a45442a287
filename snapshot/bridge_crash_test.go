package snapshot_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/snapshot"
)

// openCrashingAt copies template into a new dir and opens it with
// RecoverTruncate on a file system that fails every mutating call after
// the k-th, as a kill -9 there would. done: the Open finished within k
// calls (and was closed); otherwise it failed with errCrash. opts are the
// options used, less the crashing file system.
func openCrashingAt(t *testing.T, template string, segBytes int64, k int) (string, snapshot.Options, bool) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(template)))
	opts, _ := truncateOpts(dir)
	opts.SegmentBytes = segBytes
	crashing := opts
	crashing.FS = &crashFS{FS: snapshot.OS, left: k}
	s, err := snapshot.Open(crashing)
	if err == nil {
		require.NoError(t, s.Close())
		return dir, opts, true
	}
	require.ErrorIs(t, err, errCrash)
	return dir, opts, false
}

// A crash at any point of dropping covered segments leaves a dir that a
// plain Open refuses, with the damage or the gap still at its head, or
// finds whole; RecoverTruncate then finishes the drop, losing nothing.
func TestOpen_DropCoveredInterrupted(t *testing.T) {
	template := t.TempDir()
	snappedLog(t, template, 58, 600, 20, 40)
	segs := segments(t, template)
	require.LessOrEqual(t, segFirst(t, segs[2]), uint64(41))
	damage(t, template, segFirst(t, segs[2])-1, flipPayload) // the last record of segs[1]
	steps := 0
	for k := 0; ; k++ {
		require.Less(t, k, 100, "the drop never completes")
		dir, opts, done := openCrashingAt(t, template, 600, k)
		if done {
			steps = k
			break
		}
		left := segments(t, dir)
		assert.Equal(t, segs[2:], left[len(left)-len(segs)+2:], "step %d: the segments after the damage stay", k)

		plain, _ := testOptions(dir)
		plain.SegmentBytes = 600
		if s, err := snapshot.Open(plain); err == nil {
			assert.Equal(t, segs[2:], segments(t, dir), "step %d: whole only once the damaged segment is gone", k)
			assert.Equal(t, after(40, 58), replay(t, s), "step %d", k)
			require.NoError(t, s.Close())
		} else {
			var ce *snapshot.CorruptError
			require.ErrorAs(t, err, &ce, "step %d", k)
		}

		s := MustOpen(t, opts)
		assert.Equal(t, after(40, 58), replay(t, s), "step %d", k)
		assert.Zero(t, s.Lost(), "step %d", k)
		require.NoError(t, s.Close())
		assert.Equal(t, after(40, 58), reopen(t, plain), "step %d: clean afterwards", k)
	}
	t.Logf("the drop takes %d mutating calls", steps)
	assert.GreaterOrEqual(t, steps, 4, "two removals, each with a directory fsync")
}

// crashFS lets a number of mutating calls through, then fails every one
// as a process killed at that point would never make them.
type crashFS struct {
	snapshot.FS
	mu   sync.Mutex
	left int
}

var errCrash = errors.New("simulated crash")

func (c *crashFS) step() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.left == 0 {
		return errCrash
	}
	c.left--
	return nil
}

func (c *crashFS) OpenFile(name string, flag int, perm fs.FileMode) (snapshot.File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC) != 0 {
		if err := c.step(); err != nil {
			return nil, err
		}
	}
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &crashFile{File: f, fs: c}, nil
}

func (c *crashFS) Remove(name string) error {
	if err := c.step(); err != nil {
		return err
	}
	return c.FS.Remove(name)
}

func (c *crashFS) Rename(from, to string) error {
	if err := c.step(); err != nil {
		return err
	}
	return c.FS.Rename(from, to)
}

func (c *crashFS) SyncDir(dir string) error {
	if err := c.step(); err != nil {
		return err
	}
	return c.FS.SyncDir(dir)
}

func (c *crashFS) MkdirAll(dir string, perm fs.FileMode) error {
	if err := c.step(); err != nil {
		return err
	}
	return c.FS.MkdirAll(dir, perm)
}

// CreateAtomic counts the creation of the temporary file, each write and
// CloseAtomicallyReplace (fsync and rename) as mutating calls.
func (c *crashFS) CreateAtomic(path string, perm fs.FileMode) (snapshot.Pending, error) {
	if err := c.step(); err != nil {
		return nil, err
	}
	p, err := c.FS.CreateAtomic(path, perm)
	if err != nil {
		return nil, err
	}
	return &crashPending{Pending: p, fs: c}, nil
}

type crashPending struct {
	snapshot.Pending
	fs      *crashFS
	crashed bool
}

func (p *crashPending) Write(b []byte) (int, error) {
	if err := p.fs.step(); err != nil {
		p.crashed = true
		return 0, err
	}
	return p.Pending.Write(b)
}

func (p *crashPending) CloseAtomicallyReplace() error {
	if err := p.fs.step(); err != nil {
		p.crashed = true
		return err
	}
	return p.Pending.CloseAtomicallyReplace()
}

// Cleanup after a crash only closes: a killed process leaves its
// temporary file for the next Open to sweep.
func (p *crashPending) Cleanup() error {
	if c, ok := p.Pending.(io.Closer); ok && p.crashed {
		return c.Close()
	}
	return p.Pending.Cleanup()
}

type crashFile struct {
	snapshot.File
	fs *crashFS
}

func (f *crashFile) Write(p []byte) (int, error) {
	if err := f.fs.step(); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *crashFile) Truncate(n int64) error {
	if err := f.fs.step(); err != nil {
		return err
	}
	return f.File.Truncate(n)
}

func (f *crashFile) Sync() error {
	if err := f.fs.step(); err != nil {
		return err
	}
	return f.File.Sync()
}

// A bridge interrupted at any step leaves a dir that a plain Open refuses
// (or, once done, opens) and RecoverTruncate recovers with every record
// after the snapshot, nothing lost.
func TestOpen_BridgeInterrupted(t *testing.T) {
	tests := []struct {
		name     string
		segBytes int64
		lsn      uint64
		tail     bool // a torn tail on the newest segment
	}{
		{"newest segment, torn tail", 0, 5, true},
		{"older segment after another", 600, 27, false},
	}
	target := func(lsn uint64) string { return fmt.Sprintf("%020d.log", lsn+1) }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			template := t.TempDir()
			snappedLog(t, template, 58, tt.segBytes, 20, 40)
			file, off := damage(t, template, tt.lsn, flipPayload)
			if tt.tail {
				segs := segments(t, template)
				require.Len(t, segs, 1)
				modifyFile(t, filepath.Join(template, segs[0]), func(b []byte) []byte { return append(b, 0, 0, 1, 0, 7) })
			}
			steps, leftovers := 0, 0
			for k := 0; ; k++ {
				require.Less(t, k, 100, "the bridge never completes")
				dir, opts, done := openCrashingAt(t, template, tt.segBytes, k)
				if done {
					steps = k
					break
				}
				if segs := segments(t, dir); slices.Contains(segs, file) && slices.Contains(segs, target(tt.lsn)) {
					leftovers++ // killed between the rename and the removal of the damaged segment
				}

				plain, _ := testOptions(dir)
				plain.SegmentBytes = tt.segBytes
				if s, err := snapshot.Open(plain); err == nil {
					t.Logf("step %d: a plain Open finds the bridge done", k)
					assert.Equal(t, after(40, 58), replay(t, s), "step %d", k)
					require.NoError(t, s.Close())
				} else {
					var ce *snapshot.CorruptError
					require.ErrorAs(t, err, &ce, "step %d", k)
					assert.Equal(t, file, ce.File, "step %d", k)
					assert.Equal(t, off, ce.Offset, "step %d", k)
				}

				s := MustOpen(t, opts)
				assert.Equal(t, after(40, 58), replay(t, s), "step %d", k)
				assert.Zero(t, s.Lost(), "step %d", k)
				s.Start(nil, nil)
				waitDurable(t, s, appendN(t, s, 2))
				require.NoError(t, s.Close())
				assert.Equal(t, after(40, 60), reopen(t, plain), "step %d: clean afterwards", k)
			}
			t.Logf("the bridge takes %d mutating calls", steps)
			assert.Greater(t, steps, 4)
			assert.Positive(t, leftovers, "some crash leaves the new segment beside the damaged one")
		})
	}
}

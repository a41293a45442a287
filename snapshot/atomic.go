package snapshot

import (
	"fmt"
	"os"
	"path/filepath"
)

// atomicFile writes a file so that it appears complete or not at all:
// it writes to a temporary file beside the target, fsyncs it, renames it
// into place and fsyncs the directory (spec section 7).
//
// We do not use github.com/google/renameio/v2: its temporary files are
// named ".<name><random>", while the spec requires temporary files in the
// data dir to end in ".tmp" so that startup can find and sweep them; and
// renameio does not fsync the directory after the rename, which we need
// anyway. The temporary name is the target name plus ".tmp"; at most one
// writer per target exists at a time (WriteSnapshot is serialized).
type atomicFile struct {
	fsys FS
	f    File
	path string
	tmp  string
}

// createAtomic creates (or truncates a leftover) path+".tmp".
func createAtomic(fsys FS, path string) (*atomicFile, error) {
	tmp := path + tmpSuffix
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, filePerm)
	if err != nil {
		return nil, err
	}
	return &atomicFile{fsys: fsys, f: f, path: path, tmp: tmp}, nil
}

// Write writes to the temporary file.
func (a *atomicFile) Write(p []byte) (int, error) { return a.f.Write(p) }

// Commit fsyncs and closes the temporary file, renames it to the target and
// fsyncs the directory. On failure before the rename the temporary file is
// removed.
func (a *atomicFile) Commit() error {
	if err := a.f.Sync(); err != nil {
		a.Abort()
		return fmt.Errorf("cannot fsync %s: %w", a.tmp, err)
	}
	if err := a.f.Close(); err != nil {
		_ = a.fsys.Remove(a.tmp)
		return fmt.Errorf("cannot close %s: %w", a.tmp, err)
	}
	if err := a.fsys.Rename(a.tmp, a.path); err != nil {
		_ = a.fsys.Remove(a.tmp)
		return fmt.Errorf("cannot rename %s into place: %w", a.tmp, err)
	}
	if err := a.fsys.SyncDir(filepath.Dir(a.path)); err != nil {
		return fmt.Errorf("cannot fsync directory of %s: %w", a.path, err)
	}
	return nil
}

// Abort closes and removes the temporary file; errors are ignored (a
// leftover is swept at the next Open).
func (a *atomicFile) Abort() {
	_ = a.f.Close()
	_ = a.fsys.Remove(a.tmp)
}

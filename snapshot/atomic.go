package snapshot

import (
	"fmt"
	"path/filepath"
)

// atomicFile writes a file so that it appears complete or not at all
// (spec section 7): FS.CreateAtomic (renameio on the real file system)
// writes a temporary file beside the target, fsyncs it and renames it into
// place; Commit then fsyncs the directory, which renameio leaves to us.
// Startup sweeps temporary files a crash left behind (see isTempName).
type atomicFile struct {
	fsys FS
	p    Pending
	path string
}

// createAtomic starts writing path through a temporary file.
func createAtomic(fsys FS, path string) (*atomicFile, error) {
	p, err := fsys.CreateAtomic(path, filePerm)
	if err != nil {
		return nil, err
	}
	return &atomicFile{fsys: fsys, p: p, path: path}, nil
}

// Write writes to the temporary file.
func (a *atomicFile) Write(b []byte) (int, error) { return a.p.Write(b) }

// Commit fsyncs and closes the temporary file, renames it to the target
// and fsyncs the directory. On failure before the rename the temporary
// file is removed.
func (a *atomicFile) Commit() error {
	if err := a.Publish(); err != nil {
		return err
	}
	if err := a.fsys.SyncDir(filepath.Dir(a.path)); err != nil {
		return fmt.Errorf("cannot fsync directory of %s: %w", a.path, err)
	}
	return nil
}

// Publish is Commit without the fsync of the directory. The caller fsyncs
// it later, before anything that needs the new name to be durable.
func (a *atomicFile) Publish() error {
	if err := a.p.CloseAtomicallyReplace(); err != nil {
		_ = a.p.Cleanup()
		return fmt.Errorf("cannot put %s in place of %s: %w", filepath.Base(a.p.Name()), filepath.Base(a.path), err)
	}
	return nil
}

// Abort closes and removes the temporary file; errors are ignored (a
// leftover is swept at the next Open).
func (a *atomicFile) Abort() { _ = a.p.Cleanup() }

package snapshot

import (
	"context"
	"fmt"
	"path/filepath"
)

// WriteSnapshot writes the snapshot file snapshot-<lsn> atomically.
// fill streams entries through the SnapshotWriter into a temporary file beside the target.
// The file is fsynced and renamed into place, then the directory is fsynced (atomicFile).
// The snapshot is published only once every record up to lsn is durable.
// It waits for the writer, so a snapshot is never ahead of the log.
//
// Afterwards it keeps the new snapshot and the previous valid one.
// It deletes older snapshot files.
// It deletes the log segments whose records are all <= the previous snapshot's LSN.
// So falling back to the previous snapshot still finds its log.
// The active segment is never deleted.
// Failing deletions are logged, not returned.
//
// lsn must be <= LastLSN, since the caller froze its state at lsn.
// It must be greater than the newest snapshot's LSN.
// WriteSnapshot runs on a caller's background goroutine, concurrently with Append.
// A second concurrent call returns ErrSnapshotBusy.
// If fill returns an error, nothing is published.
func (s *Store) WriteSnapshot(lsn uint64, fill func(w *SnapshotWriter) error) error {
	if err := s.beginSnapshot(lsn); err != nil {
		return err
	}
	defer s.snapBusy.Store(false)
	start := now()
	name := snapName(lsn)
	size, entries, err := s.writeSnapshotFile(name, lsn, snapVersion, fill)
	if err != nil {
		return err
	}
	d := now().Sub(start)
	s.stats.snapshot(lsn, size, d)
	s.log.Info("snapshot written", "file", name, "entries", entries, "bytes", size, "duration", d)
	s.stats.snapshotWrote(size)
	s.incr = nil // the newest snapshot is whole: the next incremental one starts over
	s.retain(&snapFile{name: name, lsn: lsn, size: size, entries: entries, state: snapValid, version: snapVersion})
	return nil
}

// writeSnapshotFile writes a whole snapshot or a manifest, as version says.
// It publishes it once every record up to lsn is durable.
// A size of -1 with an error says the file may have been published.
// The error came after its rename.
func (s *Store) writeSnapshotFile(name string, lsn uint64, version uint32, fill func(w *SnapshotWriter) error) (int64, uint64, error) {
	af, err := createAtomic(s.fsys, filepath.Join(s.dir, name))
	if err != nil {
		return 0, 0, fmt.Errorf("cannot create snapshot %s: %w", name, err)
	}
	sw := newSnapshotWriter(af, lsn, version)
	if err := fill(sw); err != nil {
		sw.done = true
		sw.release()
		af.Abort()
		return 0, 0, fmt.Errorf("cannot fill snapshot %s: %w", name, err)
	}
	if err := sw.finish(); err != nil {
		af.Abort()
		return 0, 0, fmt.Errorf("cannot write snapshot %s: %w", name, err)
	}
	if err := s.WaitDurable(context.Background(), lsn); err != nil {
		af.Abort()
		return 0, 0, fmt.Errorf("cannot publish snapshot %s: %w", name, err)
	}
	if err := af.Commit(); err != nil {
		return -1, 0, fmt.Errorf("cannot write snapshot %s: %w", name, err)
	}
	return sw.size, sw.count, nil
}

// newestSnapshot returns the LSN of the newest snapshot not known to be invalid.
func (s *Store) newestSnapshot() (uint64, bool) {
	s.filesMu.Lock()
	defer s.filesMu.Unlock()
	for i := len(s.snaps) - 1; i >= 0; i-- {
		if s.snaps[i].state != snapInvalid {
			return s.snaps[i].lsn, true
		}
	}
	return 0, false
}

// retain applies the retention rule after the snapshot ns was written.
// It keeps ns and the previous valid snapshot, with the parts either uses.
// It removes older snapshots first, then the parts no kept one uses.
// ns and the directory are already fsynced.
func (s *Store) retain(ns *snapFile) {
	s.filesMu.Lock()
	var prev *snapFile
	for _, sf := range s.snaps {
		if sf.state != snapInvalid && sf.lsn < ns.lsn {
			prev = sf // snaps are sorted: the last match is the newest
		}
	}
	var drop, dropParts []string
	keep := make([]*snapFile, 0, 2)
	used := map[string]bool{}
	for _, p := range ns.parts {
		used[p] = true
	}
	if prev != nil {
		for _, p := range prev.parts {
			used[p] = true
		}
	}
	for _, sf := range s.snaps {
		switch {
		case sf == prev:
			keep = append(keep, sf)
		case sf.lsn != ns.lsn: // same LSN: replaced by the rename
			drop = append(drop, sf.name)
		}
		if sf != prev {
			for _, p := range sf.parts {
				if !used[p] {
					used[p] = true // once
					dropParts = append(dropParts, p)
				}
			}
		}
	}
	s.snaps = append(keep, ns)
	if prev != nil {
		i := 0
		for i < len(s.segs)-1 && s.segs[i].last <= prev.lsn {
			drop = append(drop, s.segs[i].name)
			i++
		}
		s.segs = append([]*segment(nil), s.segs[i:]...)
	}
	s.filesMu.Unlock()
	for _, name := range append(drop, dropParts...) {
		if err := s.fsys.Remove(filepath.Join(s.dir, name)); err != nil {
			s.log.Warn("cannot remove old file", "file", name, "err", err)
			continue
		}
		s.log.Debug("removed old file", "file", name)
	}
}

// beginSnapshot checks that a snapshot at lsn may be written now.
// When it may, it marks the one snapshot under way.
// The caller clears snapBusy.
func (s *Store) beginSnapshot(lsn uint64) error {
	if s.opts.ReadOnly {
		return ErrReadOnly
	}
	if !s.snapBusy.CompareAndSwap(false, true) {
		return ErrSnapshotBusy
	}
	err := s.snapshotAllowed(lsn)
	if err != nil {
		s.snapBusy.Store(false)
	}
	return err
}

func (s *Store) snapshotAllowed(lsn uint64) error {
	if s.isClosed() {
		return ErrClosed
	}
	if last := s.LastLSN(); lsn > last {
		return fmt.Errorf("%w: snapshot LSN %d, last LSN %d", ErrSnapshotAhead, lsn, last)
	}
	if newest, ok := s.newestSnapshot(); ok && lsn <= newest {
		return fmt.Errorf("%w: snapshot LSN %d, newest snapshot LSN %d", ErrStaleSnapshot, lsn, newest)
	}
	return nil
}

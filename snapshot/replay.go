package snapshot

import (
	"fmt"
	"path/filepath"
)

// Replay rebuilds the caller's state. It loads the newest valid snapshot
// (Open already skipped invalid ones with a warning, falling back to the
// previous) by calling entry for each of its entries in order, then calls
// record for every log record with LSN greater than the snapshot's LSN,
// in order. It returns the snapshot's LSN (0 without a snapshot).
//
// Without a valid snapshot the log is replayed from LSN 1; if the records
// needed are not on disk the error wraps ErrMissingLog and names the
// files. Payloads are valid only during the callback: copy what you keep.
// An error from a callback stops Replay and is returned wrapped. Either
// callback may be nil. Replay must be called once, before Start.
func (s *Store) Replay(entry func(payload []byte) error, record func(lsn uint64, payload []byte) error) (snapLSN uint64, err error) {
	s.mu.Lock()
	if s.replayed || s.started {
		s.mu.Unlock()
		return 0, ErrReplayOrder
	}
	s.replayed = true
	s.mu.Unlock()
	if s.replayErr != nil {
		return 0, s.replayErr
	}
	if b := s.base; b != nil {
		snapLSN = b.lsn
		if _, _, err := walkSnapshot(s.fsys, filepath.Join(s.dir, b.name), b.lsn, entry); err != nil {
			return 0, fmt.Errorf("cannot load snapshot %s: %w", b.name, err)
		}
	}
	if err := s.readLogAfter(snapLSN, record); err != nil {
		return 0, err
	}
	return snapLSN, nil
}

// ReadLog calls record for every log record on disk, in order, from the
// oldest segment kept, snapshot or not: the inspector shows a task's whole
// remaining history with it. It may be called on a ReadOnly store.
func (s *Store) ReadLog(record func(lsn uint64, payload []byte) error) error {
	return s.readLogAfter(0, record)
}

// readLogAfter calls record for every record on disk with an LSN above
// after, in order.
func (s *Store) readLogAfter(after uint64, record func(lsn uint64, payload []byte) error) error {
	s.filesMu.Lock()
	segs := make([]segment, len(s.segs))
	for i, seg := range s.segs {
		segs[i] = *seg
	}
	s.filesMu.Unlock()
	for _, seg := range segs {
		if seg.last <= after {
			continue
		}
		if err := readSegment(s.fsys, s.dir, seg, after, record); err != nil {
			return err
		}
	}
	return nil
}

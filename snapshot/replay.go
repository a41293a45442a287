package snapshot

import (
	"fmt"
	"path/filepath"
)

// Replay rebuilds the caller's state.
// It loads the newest valid snapshot by calling entry for each of its entries in order.
// Open already skipped invalid ones with a warning, falling back to the previous.
// Then it calls record for every log record with LSN greater than the snapshot's LSN, in order.
// It returns the snapshot's LSN, or 0 without a snapshot.
//
// Without a valid snapshot the log is replayed from LSN 1.
// If the records needed are not on disk, the error wraps ErrMissingLog and names the files.
// Payloads are valid only during the callback, so copy what you keep.
// An error from a callback stops Replay and is returned wrapped.
// Either callback may be nil. Replay must be called once, before Start.
func (s *Store) Replay(entry func(payload []byte) error, record func(lsn uint64, payload []byte) error) (snapLSN uint64, err error) {
	return s.ReplayWith(Loader{Entry: entry}, record)
}

// Loader takes a snapshot's entries during Replay.
// Entry gets the unkeyed ones.
// Those are a whole snapshot's entries, a manifest's head entries and the state.
// Put gets a keyed entry of a part, replacing any entry loaded before with the same key.
// Drop says the key is gone.
// A nil Put hands the payload to Entry. A nil Drop makes a tombstone an error.
type Loader struct {
	Entry func(payload []byte) error
	Put   func(key uint64, payload []byte) error
	Drop  func(key uint64) error
}

// ReplayWith is Replay with a Loader, for snapshots written by WriteIncremental.
func (s *Store) ReplayWith(l Loader, record func(lsn uint64, payload []byte) error) (snapLSN uint64, err error) {
	if l.Entry == nil {
		l.Entry = func([]byte) error { return nil }
	}
	if l.Put == nil {
		l.Put = func(_ uint64, p []byte) error { return l.Entry(p) }
	}
	if l.Drop == nil {
		l.Drop = func(key uint64) error { return fmt.Errorf("tombstone of key %d: the caller keeps no keys", key) }
	}
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
		if s.baseIdx != nil {
			if err := s.replayManifest(b, s.baseIdx, l); err != nil {
				return 0, err
			}
		} else if _, _, err := walkSnapshot(s.fsys, filepath.Join(s.dir, b.name), b.lsn, l.Entry); err != nil {
			return 0, fmt.Errorf("cannot load snapshot %s: %w", b.name, err)
		}
	}
	if err := s.readLogAfter(snapLSN, record); err != nil {
		return 0, err
	}
	return snapLSN, nil
}

// ReadLog calls record for every log record on disk, in order.
// It starts from the oldest segment kept, snapshot or not.
// The inspector shows a task's whole remaining history with it.
// It may be called on a ReadOnly store.
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

// ReplaySize is the number of bytes Replay reads: the snapshot it loads
// and the log segments with records after it. A caller sizes its memory
// for the replay by it.
func (s *Store) ReplaySize() int64 {
	var n int64
	var after uint64
	if b := s.base; b != nil {
		n = b.size
		after = b.lsn
		if s.baseIdx != nil {
			for _, p := range s.baseIdx.parts {
				n += p.size
			}
		}
	}
	s.filesMu.Lock()
	defer s.filesMu.Unlock()
	for _, seg := range s.segs {
		if seg.last > after {
			n += seg.size
		}
	}
	return n
}

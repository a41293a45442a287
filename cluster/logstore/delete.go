package logstore

import (
	"fmt"
	"os"
	"path/filepath"
)

// DeleteRange deletes the entries from min to max, inclusive. Raft deletes
// a prefix after a snapshot, a suffix when a leader overwrites a
// conflicting tail, or everything. A prefix drops whole segments and
// records the new first index. A suffix removes later segments and
// truncates the one it starts in. A range strictly inside the log is
// refused: raft never asks for one, and it would leave a gap.
func (s *Store) DeleteRange(min, max uint64) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.RLock()
	closed, first, last := s.closed, s.first, s.lastLocked()
	s.mu.RUnlock()
	switch {
	case closed:
		return ErrClosed
	case min > max || first == 0 || max < first || min > last:
		return nil
	case min <= first && max >= last:
		return s.deleteAll()
	case min <= first:
		return s.deletePrefix(max + 1)
	case max >= last:
		return s.deleteSuffix(min)
	}
	return fmt.Errorf("raft log: cannot delete %d..%d from inside %d..%d", min, max, first, last)
}

// deletePrefix keeps the entries from index on. The first file goes first,
// so a crash while segments are removed finds them wholly before it.
// Neither is made durable with a directory fsync (see writeFirst): what a
// crash brings back is a prefix raft deletes again.
func (s *Store) deletePrefix(index uint64) error {
	s.mu.RLock()
	keep := 0
	for keep < len(s.segs) && s.segs[keep].last() < index {
		keep++
	}
	onBoundary := s.segs[keep].first == index
	s.mu.RUnlock()
	if !onBoundary {
		if err := writeFirst(s.fsys, s.dir, index); err != nil {
			return err
		}
	}
	s.mu.Lock()
	drop := s.segs[:keep:keep]
	s.segs = s.segs[keep:]
	s.first = index
	s.mu.Unlock()
	for _, g := range drop {
		if err := s.removeSegment(g); err != nil {
			return err
		}
	}
	return nil
}

// deleteSuffix drops the entries from index on. Later segments are
// removed, newest first, and the directory fsynced before the segment
// index lies in is truncated. A crash so never leaves a gap.
func (s *Store) deleteSuffix(index uint64) error {
	s.mu.Lock()
	k := len(s.segs) - 1
	for s.segs[k].first > index {
		k--
	}
	g := s.segs[k]
	drop := s.segs[k+1:]
	if g.first == index {
		// index > first, so an earlier segment keeps the entries before it.
		drop = s.segs[k:]
		g = nil
	}
	drop = append([]*segment(nil), drop...)
	s.segs = s.segs[:len(s.segs)-len(drop)]
	var cut int64
	if g != nil {
		cut = g.offs[index-g.first]
		g.offs = g.offs[:index-g.first]
		g.end = cut
	}
	s.mu.Unlock()
	for i := len(drop) - 1; i >= 0; i-- {
		if err := s.removeSegment(drop[i]); err != nil {
			return err
		}
	}
	if len(drop) > 0 {
		if err := s.syncDir(); err != nil {
			return err
		}
	}
	if g == nil {
		return nil
	}
	if err := g.f.Truncate(cut); err != nil {
		return fmt.Errorf("cannot truncate raft log %s at offset %d: %w", g.name, cut, err)
	}
	if err := g.f.Sync(); err != nil {
		return fmt.Errorf("cannot fsync raft log %s: %w", g.name, err)
	}
	return nil
}

// deleteAll empties the log, newest segment first. The first file goes
// last, so entries a crash leaves are a prefix it still bounds.
func (s *Store) deleteAll() error {
	s.mu.Lock()
	drop := s.segs
	s.segs, s.first = nil, 0
	s.mu.Unlock()
	for i := len(drop) - 1; i >= 0; i-- {
		if err := s.removeSegment(drop[i]); err != nil {
			return err
		}
	}
	if err := removeFirst(s.fsys, s.dir); err != nil {
		return err
	}
	return s.syncDir()
}

// removeSegment closes and removes a segment no longer in s.segs.
func (s *Store) removeSegment(g *segment) error {
	g.f.Close()
	if err := s.fsys.Remove(filepath.Join(s.dir, g.name)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("cannot remove raft log %s: %w", g.name, err)
	}
	return nil
}

// dropEmpty removes the newest segment, which holds no record.
func (s *Store) dropEmpty(g *segment) error {
	s.mu.Lock()
	s.segs = s.segs[:len(s.segs)-1]
	s.mu.Unlock()
	if err := s.removeSegment(g); err != nil {
		return err
	}
	return s.syncDir()
}

package logstore

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"

	"github.com/apollo11/apollo11/snapshot"
)

// keepBuffer is the largest write buffer kept for the next batch.
const keepBuffer = 1 << 20

// StoreLog stores one entry, durably, before it returns.
func (s *Store) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs stores entries with consecutive indexes, following the last
// one kept (any index when the log is empty). They are fsynced before it
// returns. On error none of them is kept.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.RLock()
	closed, last := s.closed, s.lastLocked()
	s.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	next := logs[0].Index
	if last != 0 && next != last+1 {
		return fmt.Errorf("raft log: storing index %d after %d: indexes must follow on", next, last)
	}
	if next == 0 {
		return fmt.Errorf("raft log: index 0 is not a raft index")
	}
	for i, l := range logs {
		if l.Index != next+uint64(i) {
			return fmt.Errorf("raft log: batch has index %d after %d: indexes must follow on", l.Index, next+uint64(i)-1)
		}
		if uint64(entrySize(l)) > snapshot.MaxPayload {
			return fmt.Errorf("raft log: entry %d of %d bytes is too large", l.Index, entrySize(l))
		}
	}
	defer func() {
		if cap(s.buf) > keepBuffer {
			s.buf = nil
		}
	}()
	for len(logs) > 0 {
		n, err := s.appendChunk(logs)
		if err != nil {
			return err
		}
		logs = logs[n:]
	}
	return nil
}

// appendChunk writes as many of logs as fit the active segment (at least
// one, into a new segment if need be), fsyncs and publishes them. It
// returns how many it wrote.
func (s *Store) appendChunk(logs []*raft.Log) (int, error) {
	g := s.active()
	if g != nil && len(g.offs) == 0 && g.first != logs[0].Index {
		// An empty log's leftover segment, named after another index.
		if err := s.dropEmpty(g); err != nil {
			return 0, err
		}
		g = nil
	}
	if g == nil || g.end >= s.opts.SegmentBytes {
		var err error
		if g, err = s.newSegment(logs[0].Index); err != nil {
			return 0, err
		}
	}
	s.buf = s.buf[:0]
	offs := make([]int64, 0, len(logs))
	var payload []byte
	for _, l := range logs {
		size := int64(len(s.buf) + snapshot.RecordHeaderSize + entrySize(l))
		if len(offs) > 0 && g.end+size > s.opts.SegmentBytes {
			break
		}
		offs = append(offs, g.end+int64(len(s.buf)))
		payload = appendEntry(payload[:0], l)
		s.buf = snapshot.AppendRecord(s.buf, l.Index, payload)
	}
	if _, err := g.f.Seek(g.end, io.SeekStart); err != nil {
		return 0, fmt.Errorf("cannot seek raft log %s: %w", g.name, err)
	}
	if _, err := g.f.Write(s.buf); err != nil {
		s.rewind(g)
		return 0, fmt.Errorf("cannot write raft log %s: %w", g.name, err)
	}
	if err := g.f.Sync(); err != nil {
		// The pages may or may not reach the disk: drop them from the file.
		s.rewind(g)
		return 0, fmt.Errorf("cannot fsync raft log %s: %w", g.name, err)
	}
	s.mu.Lock()
	if s.first == 0 {
		s.first = g.first
	}
	g.offs = append(g.offs, offs...)
	g.end += int64(len(s.buf))
	s.mu.Unlock()
	return len(offs), nil
}

// rewind cuts what a failed write may have left past the segment's last
// record. The next write lands there again anyway; this keeps a reopen
// from finding those bytes.
func (s *Store) rewind(g *segment) {
	if err := g.f.Truncate(g.end); err != nil {
		s.log.Warn("cannot cut a failed write from the raft log", "file", g.name, "err", err)
	}
}

// active is the newest segment, nil when there is none.
func (s *Store) active() *segment {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.segs) == 0 {
		return nil
	}
	return s.segs[len(s.segs)-1]
}

// newSegment creates the segment whose first record is index, with its
// file header, and fsyncs the directory. The first fsync of its records
// makes the header durable too.
func (s *Store) newSegment(index uint64) (*segment, error) {
	name := segName(index)
	path := filepath.Join(s.dir, name)
	f, err := s.fsys.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot create raft log %s: %w", name, err)
	}
	hdr := snapshot.AppendFileHeader(nil, segFormat)
	if _, err := f.Write(hdr); err != nil {
		f.Close()
		s.fsys.Remove(path)
		return nil, fmt.Errorf("cannot write raft log %s: %w", name, err)
	}
	if err := s.syncDir(); err != nil {
		f.Close()
		s.fsys.Remove(path)
		return nil, err
	}
	g := &segment{name: name, first: index, end: int64(len(hdr)), f: f}
	s.mu.Lock()
	s.segs = append(s.segs, g)
	s.mu.Unlock()
	return g, nil
}

func segName(first uint64) string { return fmt.Sprintf("%020d.log", first) }

// syncDir makes the directory's entries durable.
func (s *Store) syncDir() error {
	if err := s.fsys.SyncDir(s.dir); err != nil {
		return fmt.Errorf("cannot fsync raft log dir %s: %w", s.dir, err)
	}
	return nil
}

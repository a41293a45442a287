package logstore

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/apollo11/apollo11/snapshot"
)

// segFormat is the file header of a segment of raft's log. Its magic
// differs from the main control's segments, whose payloads are records.
var segFormat = snapshot.LogFormat{Magic: "\xffA11RFT\x00", Version: 1}

// DefaultSegmentBytes is Options.SegmentBytes when zero.
// A prefix delete drops whole segments, so the disk holds at most about
// this much beyond what raft keeps.
const DefaultSegmentBytes = 16 << 20

// Options configure Open.
type Options struct {
	SegmentBytes int64        // rotate a segment past this size; 0: DefaultSegmentBytes
	FS           snapshot.FS  // nil: snapshot.OS; tests inject faults and crashes
	Logger       *slog.Logger // nil: slog.Default()
}

// ErrClosed is returned by every method after Close.
var ErrClosed = errors.New("raft log store closed")

// Store is raft's log and stable store in one directory.
// Every method may be called from any goroutine.
type Store struct {
	dir  string
	fsys snapshot.FS
	opts Options
	log  *slog.Logger
	lock io.Closer

	// wmu serializes writers (StoreLogs, DeleteRange, Close). A writer
	// writes and fsyncs without mu, so reads go on meanwhile.
	wmu sync.Mutex
	buf []byte // records being written, under wmu

	// mu guards the index of the log. Readers hold it while they read a
	// segment, so that a delete never closes a file under them.
	mu     sync.RWMutex
	segs   []*segment
	first  uint64 // first index kept; 0 when the log is empty
	closed bool

	stable stable
}

// segment is one segment file and the offsets of its records.
type segment struct {
	name  string
	first uint64  // index of its first record, from its name
	offs  []int64 // offs[i] is the offset of record first+i
	end   int64   // offset just past its last record
	f     snapshot.File
}

// last is the index of the segment's last record, first-1 when empty.
func (s *segment) last() uint64 { return s.first + uint64(len(s.offs)) - 1 }

// span returns where record index lies in the file.
func (s *segment) span(index uint64) (off, end int64) {
	i := index - s.first
	off, end = s.offs[i], s.end
	if int(i)+1 < len(s.offs) {
		end = s.offs[i+1]
	}
	return off, end
}

// Open opens or creates the store in dir and recovers its log.
func Open(dir string, opts Options) (*Store, error) {
	if opts.SegmentBytes <= 0 {
		opts.SegmentBytes = DefaultSegmentBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.FS == nil {
		opts.FS = snapshot.OS
	}
	s := &Store{dir: dir, fsys: opts.FS, opts: opts, log: opts.Logger.With("component", "raftlog", "dir", dir)}
	if err := s.fsys.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create raft log dir %s: %w", dir, err)
	}
	lock, err := snapshot.LockDir(dir, s.log)
	if err != nil {
		return nil, err
	}
	s.lock = lock
	if err := s.recover(); err != nil {
		s.closeFiles()
		lock.Close()
		return nil, fmt.Errorf("raft log %s: %w", dir, err)
	}
	return s, nil
}

// Close closes the files and releases the directory.
func (s *Store) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	err := s.closeFiles()
	if lerr := s.lock.Close(); err == nil {
		err = lerr
	}
	return err
}

func (s *Store) closeFiles() error {
	var err error
	for _, g := range s.segs {
		if cerr := g.f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("cannot close %s: %w", g.name, cerr)
		}
	}
	s.segs = nil
	return err
}

// IsMonotonic tells raft that indexes never skip. After restoring a
// snapshot, raft then deletes the whole log rather than leave a gap.
func (s *Store) IsMonotonic() bool { return true }

// FirstIndex returns the first index kept, 0 when the log is empty.
func (s *Store) FirstIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, ErrClosed
	}
	return s.first, nil
}

// LastIndex returns the last index written, 0 when the log is empty.
func (s *Store) LastIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, ErrClosed
	}
	return s.lastLocked(), nil
}

func (s *Store) lastLocked() uint64 {
	if s.first == 0 {
		return 0
	}
	return s.segs[len(s.segs)-1].last()
}

// GetLog reads the entry at index. An index not kept is raft.ErrLogNotFound.
func (s *Store) GetLog(index uint64, l *raft.Log) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	if s.first == 0 || index < s.first || index > s.lastLocked() {
		s.mu.RUnlock()
		return raft.ErrLogNotFound
	}
	g := s.segs[sort.Search(len(s.segs), func(i int) bool { return s.segs[i].last() >= index })]
	off, end := g.span(index)
	buf := make([]byte, end-off)
	_, err := g.f.ReadAt(buf, off)
	s.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("cannot read raft log %s at offset %d: %w", g.name, off, err)
	}
	payload, err := snapshot.DecodeRecord(buf, index)
	if err != nil {
		return fmt.Errorf("raft log %s at offset %d: %w", g.name, off, err)
	}
	return decodeEntry(payload, index, l)
}

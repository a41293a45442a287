package snapshot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Store is the durable storage of the main control. It is an append-only,
// segmented log of records plus atomic snapshot files.
//
// Append, LastLSN, DurableLSN, WaitDurable and Stats may be called from
// any goroutine. Replay and Start are called once, in that order, by the
// owner. WriteSnapshot runs on a background goroutine of the caller,
// concurrently with Append. The callbacks given to Start run on the
// Store's writer goroutine.
type Store struct {
	opts Options
	fsys FS
	dir  string
	log  *slog.Logger
	lost uint64 // see Lost

	// mu guards the pending batch and the lifecycle flags.
	mu       sync.Mutex
	pending  []byte // encoded records not yet handed to the writer
	last     uint64 // LSN of the last appended record
	closed   bool
	started  bool
	replayed bool

	kick     chan struct{} // Append -> writer, capacity 1
	closing  chan struct{} // closed by Close
	done     chan struct{} // closed when the writer goroutine ends
	closedCh chan struct{} // closed when Close has finished flushing

	lastLSN    atomic.Uint64
	durableLSN atomic.Uint64
	healthy    atomic.Bool

	durMu sync.Mutex
	durCh chan struct{} // closed and replaced whenever durableLSN advances

	w     writer     // owned by the writer goroutine (or by Close if never started)
	stall stallWatch // shared by the writer and its stall timer

	lock *dirLock // nil when ReadOnly

	// filesMu guards the lists of segments and snapshots, shared by the
	// writer (rotation) and WriteSnapshot (retention).
	filesMu sync.Mutex
	segs    []*segment
	snaps   []*snapFile

	base      *snapFile // snapshot Replay loads
	baseIdx   *manifestIndex
	replayErr error
	problems  []Problem // what Open found in the log (see Problems)

	snapBusy atomic.Bool
	// incr is the structure of the newest snapshot when it is a
	// manifest. WriteIncremental builds on it. Only the snapshot
	// writer (snapBusy) and Open touch it.
	incr  *incrState
	stats statsState
}

// Open scans opts.Dir, creating it unless ReadOnly. It sweeps leftover
// temporary files (see isTempName) with a warning. It validates the log
// and picks the snapshot to load, following spec section 7.
//
//   - A torn tail of the newest segment is cut off with a warning. That is
//     a record running past the end of the file, a bad checksum on its
//     last record, or a tail of zero bytes.
//   - Any other bad record, or a break in the LSN sequence, makes Open
//     fail. The *CorruptError names the file and offset. RecoverTruncate
//     changes that. Then damage that loses nothing Replay needs is skipped
//     (recovery.skipWithoutLoss). Bad bytes after a segment's last record
//     that the next segment continues are cut. Damage the newest valid
//     snapshot holds is bridged, or the segments before the next whole one
//     are dropped. Otherwise the log is cut there. Later segments are
//     deleted and the loss is logged at error level.
//   - The newest valid snapshot is chosen. An invalid one is skipped with a
//     warning.
//
// With ReadOnly nothing in the directory is created, truncated, removed or
// written. Cuts and bridges are applied only to what Replay reads.
func Open(opts Options) (*Store, error) {
	o := opts.withDefaults()
	var lock *dirLock
	if !o.ReadOnly {
		if err := o.FS.MkdirAll(o.Dir, dirPerm); err != nil {
			return nil, fmt.Errorf("cannot create data dir %s: %w", o.Dir, err)
		}
		var err error
		if lock, err = lockDir(o.Dir, o.Logger); err != nil {
			return nil, err
		}
	}
	unlock := func() {
		if lock != nil {
			lock.Close()
		}
	}
	r, err := recoverDir(o)
	if err != nil {
		unlock()
		return nil, err
	}
	if !o.ReadOnly {
		if err := syncRecovered(o, r); err != nil {
			unlock()
			return nil, err
		}
	}
	s := &Store{
		opts: o, fsys: o.FS, dir: o.Dir, log: o.Logger,
		last:     r.lastLSN,
		kick:     make(chan struct{}, 1),
		closing:  make(chan struct{}),
		done:     make(chan struct{}),
		closedCh: make(chan struct{}),
		durCh:    make(chan struct{}),
		segs:     r.segs, snaps: r.snaps,
		base: r.base, baseIdx: r.baseIdx, incr: r.incr, replayErr: r.replayErr, lost: r.lost, problems: r.problems,
		lock: lock,
	}
	s.lastLSN.Store(r.lastLSN)
	s.durableLSN.Store(r.lastLSN)
	s.healthy.Store(true)
	if n := len(r.segs); n > 0 {
		s.w.reuse = r.segs[n-1]
	}
	if r.base != nil {
		s.stats.snapLSN = r.base.lsn
		s.stats.snapBytes = r.base.size
	}
	if o.Fsync == FsyncNever && !o.ReadOnly {
		s.log.Warn("fsync=never: confirmed changes can be lost on power loss")
	}
	s.log.Info("log opened", "last_lsn", r.lastLSN, "segments", len(r.segs), "snapshot_lsn", s.stats.snapLSN, "fsync", o.Fsync.String())
	return s, nil
}

// recoverDir lists the directory, sweeps temporary files, chooses the
// snapshot and recovers the log.
func recoverDir(o Options) (*recovery, error) {
	l, err := listDir(o.FS, o.Dir)
	if err != nil {
		return nil, err
	}
	// Records an earlier Open dropped and its caller never made up for
	// (it crashed first) are reported again.
	kept, err := readLost(o.FS, o.Dir)
	if err != nil {
		return nil, err
	}
	r := &recovery{opts: o, log: o.Logger, snaps: l.snaps, lost: kept}
	r.sweep(l.temps)
	// The snapshot is chosen first. That reads only snapshot files. So
	// recoverLog can tell which records the base snapshot holds.
	// checkCoverage needs both.
	if err := r.chooseSnapshot(); err != nil {
		return nil, err
	}
	if err := r.recoverLog(l.segments); err != nil {
		return nil, err
	}
	if err := r.checkCoverage(); err != nil {
		return nil, err
	}
	if r.replayErr == nil {
		r.sweepParts(l.parts)
	}
	return r, nil
}

// syncRecovered makes Open's view durable. The newest segment may hold
// data a crashed process wrote but never fsynced. It must be fsynced
// before a new segment follows it. Cuts and removals need a directory
// fsync.
func syncRecovered(o Options, r *recovery) error {
	if n := len(r.segs); n > 0 {
		name := r.segs[n-1].name
		f, err := o.FS.OpenFile(filepath.Join(o.Dir, name), os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("cannot open log segment %s: %w", name, err)
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("cannot fsync log segment %s: %w", name, err)
		}
	}
	if r.changed {
		if err := o.FS.SyncDir(o.Dir); err != nil {
			return fmt.Errorf("cannot fsync data dir %s: %w", o.Dir, err)
		}
	}
	return nil
}

// Start starts the writer goroutine. onDurable(lsn) is called whenever
// every record up to lsn is durable. Durable means fsynced, or written
// with FsyncNever. It is called from that goroutine, never concurrently
// with itself. onHealth(err) is called with the error when writing or
// fsyncing starts failing. It is also called with ErrStalled when a write
// or fsync stalls past Options.StallTimeout. That call comes from a timer
// goroutine while the writer waits. onHealth(nil) is called when a write
// succeeds again. Two onHealth calls never run at once. While unhealthy
// the writer retries every second and whenever records arrive. Either
// callback may be nil. Callbacks must not block for long, as they delay
// the log. They must not call Close, which waits for the writer goroutine.
//
// Start panics if called twice, on a ReadOnly store, or when Replay found
// records missing.
func (s *Store) Start(onDurable func(lsn uint64), onHealth func(err error)) {
	if s.opts.ReadOnly {
		panic("snapshot: Start on a read-only store")
	}
	if s.replayErr != nil {
		panic("snapshot: Start on a store that cannot be replayed: " + s.replayErr.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		panic("snapshot: Start called twice or after Close")
	}
	s.started = true
	s.w.onDurable, s.w.onHealth = onDurable, onHealth
	go s.run()
}

// Sync writes and fsyncs every record appended so far, whatever
// Options.Fsync says, for records that must be on disk before anything is
// served. It is called before Start, on the caller's goroutine.
func (s *Store) Sync() error {
	s.mu.Lock()
	ok := !s.started && !s.closed && !s.opts.ReadOnly && s.replayErr == nil
	s.mu.Unlock()
	if !ok {
		return errors.New("snapshot: Sync only before Start on a writable, replayed store")
	}
	s.grab()
	if len(s.w.work) > 0 {
		if err := s.flush(); err != nil {
			s.stats.failed(err)
			return err
		}
	}
	if s.w.needSync {
		return s.sync()
	}
	return nil
}

// Append copies payload into the pending batch and returns its LSN. LSNs
// are consecutive. Append never waits for disk I/O, only for a short
// mutex. It keeps accepting while the disk is failing, holding records in
// memory. The caller decides whether to refuse changes (see Start's
// onHealth). Append drops the payload and returns 0, never a valid LSN,
// in three cases. They are after Close, on a ReadOnly store, and on a
// store whose Replay fails for missing records. The payload must be at
// most MaxPayload bytes.
func (s *Store) Append(payload []byte) uint64 {
	s.mu.Lock()
	if s.closed || s.opts.ReadOnly || s.replayErr != nil {
		s.mu.Unlock()
		return 0
	}
	s.last++
	lsn := s.last
	s.pending = appendRecord(s.pending, lsn, payload)
	s.lastLSN.Store(lsn)
	s.mu.Unlock()
	s.stats.appended(len(payload))
	select {
	case s.kick <- struct{}{}:
	default:
	}
	return lsn
}

// LastLSN returns the LSN of the last appended record (or, before any
// Append, the last one on disk).
func (s *Store) LastLSN() uint64 { return s.lastLSN.Load() }

// Lost bounds from above how many confirmed records Open dropped with
// RecoverTruncate. It counts this Open and earlier ones whose caller did
// not call ClearLost. It is 0 when none were dropped. Their effects are
// gone, but not the ids they handed out. A caller that numbers things in
// its records skips that many, makes that durable, then calls ClearLost.
func (s *Store) Lost() uint64 { return s.lost }

// Problems returns the torn tails and corrupt records Open found in the
// log and got past. Those are the torn tails it cut. With RecoverTruncate
// they include the corruption it bridged (Problem.Bridge set) or cut the
// log at. A corrupt record that made Open fail is in its *CorruptError
// instead.
func (s *Store) Problems() []Problem { return slices.Clone(s.problems) }

// DurableLSN returns the LSN up to which every record is durable.
func (s *Store) DurableLSN() uint64 { return s.durableLSN.Load() }

// WaitDurable waits until every record up to lsn is durable. It returns
// ctx.Err() if ctx ends first, and an error wrapping ErrClosed if the
// Store closes without making lsn durable. The main control follows the
// log through the onDurable callback. A snapshot waits here for the
// records it covers.
func (s *Store) WaitDurable(ctx context.Context, lsn uint64) error {
	for {
		s.durMu.Lock()
		ch := s.durCh
		s.durMu.Unlock()
		if s.durableLSN.Load() >= lsn {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closedCh:
			if s.durableLSN.Load() >= lsn {
				return nil
			}
			return fmt.Errorf("record %d not durable: %w", lsn, ErrClosed)
		}
	}
}

// setDurable publishes a new durable LSN and wakes WaitDurable callers.
func (s *Store) setDurable(lsn uint64) {
	s.durableLSN.Store(lsn)
	s.durMu.Lock()
	close(s.durCh)
	s.durCh = make(chan struct{})
	s.durMu.Unlock()
}

// Close stops accepting records. It writes and fsyncs everything pending,
// in every fsync mode. It stops the writer goroutine and closes files. If the
// final write fails, the error says how many records were not written.
// A second Close returns ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
	started := s.started
	s.mu.Unlock()
	var err error
	if started {
		close(s.closing)
		<-s.done
		err = s.w.closeErr
	} else if !s.opts.ReadOnly {
		err = s.drain()
	}
	close(s.closedCh)
	if s.lock != nil {
		s.lock.Close()
	}
	if err != nil {
		s.log.Error("log not fully flushed on close", "err", err)
	}
	return err
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// now is the clock of the package (latency measurement, batch interval).
var now = time.Now

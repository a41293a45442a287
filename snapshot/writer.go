package snapshot

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// retryInterval is how often the writer retries after a failed write or
// fsync when no new records arrive.
const retryInterval = time.Second

// keepBuffer is the largest batch buffer kept for reuse once empty.
const keepBuffer = 16 << 20

// writer is the state of the writer goroutine (or of Close, when the
// Store was never started). Nothing else touches it.
type writer struct {
	onDurable func(lsn uint64)
	onHealth  func(err error)

	work     []byte    // records taken from pending and not yet durable, in LSN order
	active   File      // the open active segment; nil before the first write and after a rotation
	seg      *segment  // the active segment's entry in Store.segs
	size     int64     // bytes of the active segment that hold durable records
	dirty    bool      // bytes past size may have been written: truncate before writing again
	needSync bool      // FsyncNever: written but not fsynced
	reuse    *segment  // newest segment found by Open, continued by the first write
	lastSync time.Time // start of the last fsync, for FsyncBatch pacing
	closeErr error
}

// run is the writer goroutine. With FsyncAlways it writes and fsyncs as
// soon as records arrive. Records appended during an fsync form the next
// batch (group commit). With FsyncBatch it waits until FsyncInterval has
// passed since the previous fsync began. While unhealthy it retries every
// retryInterval and whenever records arrive.
func (s *Store) run() {
	defer close(s.done)
	retry := time.NewTimer(retryInterval)
	retry.Stop()
	for {
		closing := false
		select {
		case <-s.kick:
		case <-retry.C:
		case <-s.closing:
			closing = true
		}
		if !closing && s.opts.Fsync == FsyncBatch {
			closing = s.pace()
		}
		if closing {
			s.w.closeErr = s.drain()
			return
		}
		if err := s.writePending(); err != nil {
			retry.Reset(retryInterval)
		}
	}
}

// pace waits out the rest of the batch interval. It reports whether Close
// was called meanwhile.
func (s *Store) pace() (closing bool) {
	d := s.w.lastSync.Add(s.opts.FsyncInterval).Sub(now())
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return false
	case <-s.closing:
		return true
	}
}

// grab moves the pending batch behind the writer's unwritten records.
func (s *Store) grab() {
	s.mu.Lock()
	if len(s.w.work) == 0 {
		s.w.work, s.pending = s.pending, s.w.work[:0]
	} else {
		s.w.work = append(s.w.work, s.pending...)
		s.pending = s.pending[:0]
	}
	s.mu.Unlock()
}

func (s *Store) writePending() error {
	s.grab()
	if len(s.w.work) == 0 {
		return nil
	}
	if err := s.flush(); err != nil {
		s.fail(err)
		return err
	}
	return nil
}

// drain is the last write, at Close. Everything pending is written and
// fsynced whatever the mode. Then the active segment is closed.
func (s *Store) drain() error {
	s.grab()
	var err error
	if len(s.w.work) > 0 {
		err = s.flush()
	}
	if err == nil && s.w.needSync {
		err = s.sync()
	}
	if err != nil {
		s.stats.failed(err)
		err = fmt.Errorf("records %d..%d not written: %w", s.DurableLSN()+1, s.LastLSN(), err)
	}
	if s.w.active != nil {
		if cerr := s.w.active.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("cannot close log segment %s: %w", s.w.seg.name, cerr)
		}
		s.w.active = nil
	}
	return err
}

// flush writes the writer's records in chunks that fit the active segment,
// rotating as needed. Each chunk is fsynced (except with FsyncNever) and
// then reported durable. On error the records not yet durable stay in
// work. The next flush truncates the active segment back to the last
// durable record and writes them again.
func (s *Store) flush() error {
	w := &s.w
	done := 0
	defer func() {
		w.work = w.work[:copy(w.work, w.work[done:])]
		if len(w.work) == 0 && cap(w.work) > keepBuffer {
			w.work = nil
		}
	}()
	for done < len(w.work) {
		if w.active == nil {
			if err := s.openActive(recordLSN(w.work[done:])); err != nil {
				return err
			}
		}
		if w.dirty {
			if err := s.rewind(); err != nil {
				return err
			}
		}
		n, records, last := chunk(w.work[done:], s.opts.SegmentBytes-w.size, w.size == w.seg.start)
		if n == 0 {
			if err := s.rotate(); err != nil {
				return err
			}
			continue
		}
		w.dirty = true
		s.watchStall("write")
		_, err := w.active.Write(w.work[done : done+n])
		s.unwatch()
		if err != nil {
			return fmt.Errorf("cannot write log segment %s: %w", w.seg.name, err)
		}
		s.stats.wrote(n)
		if s.opts.Fsync == FsyncNever {
			w.needSync = true
		} else if err := s.sync(); err != nil {
			return err
		}
		w.dirty = false
		w.size += int64(n)
		done += n
		s.filesMu.Lock()
		w.seg.last, w.seg.size, w.seg.records = last, w.size-w.seg.start, w.seg.records+records
		s.filesMu.Unlock()
		s.durable(last)
	}
	return nil
}

// openActive opens the segment the record first goes to. That is the
// newest segment found by Open if it has room and this format. Otherwise
// it is a new one named after first, which starts with its file header.
// The fsync of its first records makes that header durable. A segment of
// an older format is never appended to. The directory is fsynced after
// creating a segment.
func (s *Store) openActive(first uint64) error {
	w := &s.w
	if seg := w.reuse; seg != nil && seg.header > 0 && seg.start == seg.header &&
		seg.start+seg.size < s.opts.SegmentBytes && seg.last+1 == first {
		f, err := s.fsys.OpenFile(filepath.Join(s.dir, seg.name), os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("cannot open log segment %s: %w", seg.name, err)
		}
		end := seg.start + seg.size
		if _, err := f.Seek(end, io.SeekStart); err != nil {
			f.Close()
			return fmt.Errorf("cannot seek log segment %s: %w", seg.name, err)
		}
		w.active, w.seg, w.size, w.dirty, w.reuse = f, seg, end, false, nil
		return nil
	}
	w.reuse = nil
	name := segName(first)
	f, err := s.fsys.OpenFile(filepath.Join(s.dir, name), os.O_RDWR|os.O_CREATE|os.O_TRUNC, filePerm)
	if err != nil {
		return fmt.Errorf("cannot create log segment %s: %w", name, err)
	}
	if _, err := f.Write(appendFileHeader(nil, segMagic, segVersion)); err != nil {
		f.Close()
		return fmt.Errorf("cannot write log segment %s: %w", name, err)
	}
	if err := s.fsys.SyncDir(s.dir); err != nil {
		f.Close()
		return fmt.Errorf("cannot fsync data dir after creating %s: %w", name, err)
	}
	seg := &segment{name: name, first: first, last: first - 1, header: fileHeaderSize, start: fileHeaderSize}
	s.filesMu.Lock()
	if n := len(s.segs); n > 0 && s.segs[n-1].name == name {
		// Open found an empty segment, of an older format or with a header
		// a crash tore. The new one replaces it.
		s.segs[n-1] = seg
	} else {
		s.segs = append(s.segs, seg)
	}
	s.filesMu.Unlock()
	w.active, w.seg, w.size, w.dirty = f, seg, fileHeaderSize, false
	s.log.Debug("log segment created", "file", name)
	return nil
}

// rewind truncates the active segment back to its last durable record,
// dropping whatever a failed write or fsync left behind.
func (s *Store) rewind() error {
	w := &s.w
	if err := w.active.Truncate(w.size); err != nil {
		return fmt.Errorf("cannot truncate log segment %s to %d bytes: %w", w.seg.name, w.size, err)
	}
	if _, err := w.active.Seek(w.size, io.SeekStart); err != nil {
		return fmt.Errorf("cannot seek log segment %s: %w", w.seg.name, err)
	}
	w.dirty = false
	return nil
}

// rotate closes the full active segment, fsyncing it first if it holds
// unsynced data. A new segment starts only after the previous one is
// fsynced (spec section 7).
func (s *Store) rotate() error {
	w := &s.w
	if w.needSync {
		if err := s.sync(); err != nil {
			return err
		}
	}
	if err := w.active.Close(); err != nil {
		s.log.Warn("cannot close full log segment", "file", w.seg.name, "err", err)
	}
	w.active, w.seg = nil, nil
	return nil
}

func (s *Store) sync() error {
	w := &s.w
	start := now()
	w.lastSync = start
	s.watchStall("fsync")
	err := w.active.Sync()
	s.unwatch()
	if err != nil {
		return fmt.Errorf("cannot fsync log segment %s: %w", w.seg.name, err)
	}
	s.stats.synced(now().Sub(start))
	w.needSync = false
	return nil
}

// durable reports records up to lsn durable, after a recovery if the log
// was unhealthy.
func (s *Store) durable(lsn uint64) {
	if !s.healthy.Load() {
		s.healthy.Store(true)
		s.log.Info("log writes recovered", "durable_lsn", lsn)
		if s.w.onHealth != nil {
			s.w.onHealth(nil)
		}
	}
	s.setDurable(lsn)
	if s.w.onDurable != nil {
		s.w.onDurable(lsn)
	}
}

// stallWatch reports the store unhealthy (ErrStalled) when one write or
// fsync has not returned within StallTimeout. A disk may hang rather than
// fail. It would otherwise hold every reply of the main control, reads
// included, for as long as it hangs. The next durable write reports the
// recovery, as after a failure. One timer serves every write and fsync,
// re-armed each time, since they are the log's hot path.
type stallWatch struct {
	mu     sync.Mutex
	timer  *time.Timer // nil until the first watch
	op     string      // the write or fsync under way
	start  time.Time
	active bool
}

// watchStall starts watching a write or fsync, and unwatch ends it. Both
// run on the writer goroutine, or in Close.
func (s *Store) watchStall(op string) {
	if s.opts.StallTimeout < 0 {
		return
	}
	w := &s.stall
	w.mu.Lock()
	w.op, w.start, w.active = op, now(), true
	w.mu.Unlock()
	if w.timer == nil {
		w.timer = time.AfterFunc(s.opts.StallTimeout, s.stalled)
	} else {
		w.timer.Reset(s.opts.StallTimeout)
	}
}

func (s *Store) unwatch() {
	w := &s.stall
	if w.timer == nil {
		return
	}
	w.timer.Stop()
	w.mu.Lock()
	w.active = false // from here on the writer goroutine reports health
	w.mu.Unlock()
}

// stalled runs on the timer's goroutine. A firing left over from an
// earlier write finds the current one younger than the timeout.
func (s *Store) stalled() {
	w := &s.stall
	w.mu.Lock()
	defer w.mu.Unlock()
	waited := now().Sub(w.start)
	if !w.active || waited < s.opts.StallTimeout || !s.healthy.Swap(false) {
		return
	}
	s.stats.failed(ErrStalled)
	s.log.Error("log "+w.op+" stalled; holding records in memory and waiting", "waited", waited.Round(time.Millisecond),
		"pending_records", s.LastLSN()-s.DurableLSN())
	if s.w.onHealth != nil {
		s.w.onHealth(fmt.Errorf("%w: %s waiting for %v", ErrStalled, w.op, s.opts.StallTimeout))
	}
}

// fail records a failed write or fsync. The first failure after a healthy
// period is logged at error level and reported through onHealth.
func (s *Store) fail(err error) {
	s.stats.failed(err)
	pending := s.LastLSN() - s.DurableLSN()
	if s.healthy.Swap(false) {
		s.log.Error("log write failed; holding records in memory and retrying", "err", err, "pending_records", pending)
		if s.w.onHealth != nil {
			s.w.onHealth(err)
		}
		return
	}
	s.log.Debug("log write retry failed", "err", err, "pending_records", pending)
}

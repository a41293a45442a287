// Package logsink keeps a daemon's logging from ever waiting on whoever
// reads its log. The main control logs from its event loop, under the lock
// that serialises all of its work. Suppose slog wrote to stderr directly.
// A stderr pipe nobody drains (a stalled log collector, a full pipe) would
// block the first log call. Then it would block the loop, and then every
// client of the state authority. A Sink takes each record into a bounded
// buffer and returns at once. One goroutine writes the buffer out. What
// does not fit is dropped and counted, not waited for. A notice line says
// how many.
package logsink

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultSize is the buffer of a Sink whose Options.Size is 0. It holds
// about a thousand long debug lines. That is enough for a burst, and small
// beside a daemon.
const DefaultSize = 1 << 20

// ErrStuck is what Close returns when the writer did not take the buffered
// records in time.
var ErrStuck = errors.New("logsink: the writer is not taking the log")

// Options configures New.
type Options struct {
	// Size is the most bytes the buffer holds for the writer (default
	// DefaultSize). The batch the writer is busy with is not counted, so
	// a Sink holds at most twice Size.
	Size int
	// Notice returns the line written where records were dropped, given
	// how many (default TextNotice). See SlogNotice for a line in the
	// log's own format.
	Notice func(dropped uint64) []byte
}

// Sink is an io.Writer for slog handlers that never blocks on the writer
// behind it (see Write). New starts its drain goroutine; Close stops it.
type Sink struct {
	w      io.Writer
	size   int
	notice func(uint64) []byte

	mu      sync.Mutex
	buf     []byte // records the drain has not taken yet
	records uint64 // how many records buf holds
	gap     uint64 // records dropped since the drain last took buf
	closed  bool

	dropped atomic.Uint64
	wake    chan struct{} // capacity 1: something to take
	stop    chan struct{} // closed by Close
	done    chan struct{} // closed when the drain has returned
}

// New returns a Sink writing to w and starts its drain.
func New(w io.Writer, opts Options) *Sink {
	if opts.Size <= 0 {
		opts.Size = DefaultSize
	}
	if opts.Notice == nil {
		opts.Notice = TextNotice
	}
	s := &Sink{w: w, size: opts.Size, notice: opts.Notice,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go s.drain()
	return s
}

// Write takes a copy of p for the drain and returns. It waits for nothing
// but the Sink's own lock, held only to copy. p must be whole records.
// slog's handlers call Write once per record with the whole line, under
// their own mutex. The Sink relies on that to keep and drop whole lines
// only. Write is safe for concurrent use all the same.
//
// A record that would take the buffer past its size is dropped. So is
// every record after it until the drain takes the buffer. The records lost
// make one gap. The notice written after the buffer stands in it. A record
// longer than the whole buffer is dropped the same way, never cut. A cut
// JSON line is not JSON, and the rest of it would run into the next line.
// After Close every record is dropped. The drain is gone, and writing in
// the caller could block on the very writer Close gave up on.
//
// Write always returns len(p), nil. A dropped record is counted (Dropped)
// and reported. An error would only invite a retry of what the Sink chose
// not to wait for.
func (s *Sink) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.mu.Lock()
	kept := false
	switch {
	case s.closed:
		s.dropped.Add(1)
		s.mu.Unlock()
		return len(p), nil
	case s.gap > 0 || len(s.buf)+len(p) > s.size:
		s.gap++
	default:
		s.buf = append(s.buf, p...)
		s.records++
		kept = true
	}
	s.mu.Unlock()
	if !kept {
		s.dropped.Add(1)
	}
	select {
	case s.wake <- struct{}{}:
	default: // the drain has been told already
	}
	return len(p), nil
}

// Dropped returns how many records never reached the writer. Write drops
// records when the buffer is full, when one is too long, and after Close.
// The writer may also refuse them. Records still in the buffer after a
// Close that timed out are not counted. The writer may yet take them.
func (s *Sink) Dropped() uint64 { return s.dropped.Load() }

// Close stops taking records and waits at most timeout for the drain to
// write what the buffer holds. The drain cannot be interrupted in a Write,
// and shutdown must not hang on a stuck writer. So past the timeout Close
// returns ErrStuck. It leaves the drain to finish, or to end with the
// process. Close may be called more than once.
func (s *Sink) Close(timeout time.Duration) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stop)
	}
	s.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-s.done:
		return nil
	case <-t.C:
	}
	select {
	case <-s.done: // done and the timer at once
		return nil
	default:
		return fmt.Errorf("%w: closed after waiting %v", ErrStuck, timeout)
	}
}

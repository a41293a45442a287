package maincontrol

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/apollo11/apollo11/maincontrol/core"
)

// shutdownGrace bounds each step of a graceful stop.
const shutdownGrace = 10 * time.Second

// snapSchedule is the state of the snapshots, the one running and the
// newest written. The gate counts the records since (gate.unsnapped).
// Server.mu guards it, except hurry.
type snapSchedule struct {
	running bool
	done    chan struct{} // closed when the running one ends
	// last is the state of the newest snapshot written or loaded, at
	// lastLSN: the next snapshot writes what changed since.
	last    *core.Snapshot
	lastLSN uint64
	hurry   atomic.Bool // stopping: snapshots run unpaced
	// restUntil is when the rest after the last paced snapshot ends
	// (pacer.rest), by time.Now, not the core's clock. The next due
	// check after it clears it.
	restUntil time.Time
	// giveUp is closed once a stop finds the log unwritable: the running
	// snapshot's records may never become durable (giveUpSnapshot).
	giveUp chan struct{}
}

// maybeSnapshot starts a snapshot when enough records or time have passed
// since the last one, unless one is running. Called with s.mu held.
func (s *Server) maybeSnapshot() {
	if s.store == nil || s.snap.running || s.gate.unsnapped == 0 || s.stopping {
		return
	}
	if s.gate.unsnapped < s.cfg.SnapshotEvery && s.now().Sub(s.gate.firstUnsnapped) < s.cfg.SnapshotInterval {
		return
	}
	if !s.snap.restUntil.IsZero() {
		// A tick looks again: nextDue brings due work back every
		// TickInterval.
		if time.Now().Before(s.snap.restUntil) {
			return
		}
		s.snap.restUntil = time.Time{}
	}
	s.startSnapshot(s.cfg.SnapshotDuty)
}

// startSnapshot freezes the core and writes the snapshot on its own
// goroutine, paced to duty (Config.SnapshotDuty). A duty of 1 is full speed.
// It runs with s.mu held.
func (s *Server) startSnapshot(duty float64) {
	snap := s.core.Freeze()
	src := snap.Since(s.snap.last, s.snap.lastLSN)
	lsn := s.gate.lastLSN
	s.gate.unsnapped = 0
	s.snap.running = true
	done := make(chan struct{})
	s.snap.done = done
	go func() {
		defer close(done)
		start := time.Now()
		// The snapshot must not be durable before the records it covers.
		if err := s.waitDurable(lsn); err != nil {
			s.mu.Lock()
			s.snap.running = false
			s.mu.Unlock()
			if errors.Is(err, context.Canceled) {
				s.log.Warn("snapshot abandoned: stopping while the log cannot be written", "lsn", lsn)
			} else {
				s.log.Warn("snapshot abandoned", "lsn", lsn, "err", err)
			}
			return
		}
		pace := newPacer(duty, 1024, &s.snap.hurry)
		err := s.store.WriteIncremental(lsn, pacedSource{Changes: src, pace: pace})
		rest := pace.rest()
		s.mu.Lock()
		s.snap.running = false
		if err == nil {
			s.snap.last, s.snap.lastLSN = snap, lsn
			if rest > 0 {
				s.snap.restUntil = time.Now().Add(rest)
			}
		}
		idle := s.gate.unsnapped == 0 && !s.stopping
		s.mu.Unlock()
		s.metrics.SnapshotDone(err)
		if err != nil {
			s.log.Error("snapshot failed", "lsn", lsn, "err", err)
			return
		}
		s.log.Debug("snapshot written", "lsn", lsn, "tasks", snap.Tasks(), "took", time.Since(start).Round(time.Millisecond))
		if idle && s.cfg.OnIdleSnapshot != nil {
			s.cfg.OnIdleSnapshot()
		}
	}()
}

// waitDurable waits until the log is durable up to lsn. A stop while the
// log cannot be written gives up waiting, with context.Canceled. The
// records may never become durable.
func (s *Server) waitDurable(lsn uint64) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.snap.giveUp:
			cancel()
		case <-ctx.Done():
		}
	}()
	return s.store.WaitDurable(ctx, lsn)
}

// giveUpSnapshot tells a snapshot waiting for the disk to give up. That
// happens once a stop is under way while the log cannot be written. It
// runs with s.mu held, whenever either changes.
func (s *Server) giveUpSnapshot() {
	if !s.stopping || s.core.Available() || s.snap.giveUp == nil {
		return
	}
	select {
	case <-s.snap.giveUp:
	default:
		close(s.snap.giveUp)
	}
}

// pacedSource paces the task entries of a snapshot (see pacer).
type pacedSource struct {
	*core.Changes
	pace *pacer
}

func (p pacedSource) WriteRange(r uint64, full bool, put func(uint64, []byte) error, drop func(uint64) error) error {
	return p.Changes.WriteRange(r, full, func(k uint64, b []byte) error {
		p.pace.step()
		return put(k, b)
	}, drop)
}

// shutdown stops gracefully. It takes no new connections or requests.
// Replies awaiting disk go out, connections close, and a last snapshot
// is saved.
func (s *Server) shutdown() error {
	if s.cfg.OnStopping != nil {
		s.cfg.OnStopping()
	}
	s.log.Info("stopping: answering what is in flight")
	s.snap.hurry.Store(true) // a running snapshot finishes at full speed
	s.mu.Lock()
	s.stopping = true
	s.giveUpSnapshot()
	drained := s.gate.drained()
	s.mu.Unlock()
	select {
	case <-drained:
	case <-time.After(shutdownGrace):
	}
	s.stopHTTP()
	s.stopAccepting()
	s.stopLoops()
	s.closeCluster()
	s.finalSnapshot()
	if err := s.closeStore(); err != nil {
		// Nothing confirmed is lost (those replies were held and dropped),
		// but the exit status must not say all went well: the last
		// changes reached neither the log nor a snapshot.
		return fmt.Errorf("stopped, but the log could not be closed: %w", err)
	}
	s.log.Info("stopped")
	return nil
}

// stopAccepting closes the main port and waits, within shutdownGrace,
// for the connections being handed to the event loops.
func (s *Server) stopAccepting() {
	if !s.acceptor.close(shutdownGrace) {
		s.log.Warn("connections being handed to an event loop did not arrive", "waited", shutdownGrace)
	}
	s.closeShakes()
}

// stopLoops stops gnet's event loops, closing every connection. It waits
// at most shutdownGrace, as a stop must end even with a loop wedged.
func (s *Server) stopLoops() {
	done := make(chan error, 1)
	go func() { done <- s.loops.Stop() }()
	select {
	case err := <-done:
		if err != nil {
			s.log.Warn("event loop did not stop cleanly", "err", err)
		}
	case <-time.After(shutdownGrace):
		s.log.Warn("event loops did not stop in time", "waited", shutdownGrace)
	}
}

func (s *Server) finalSnapshot() {
	if s.store == nil {
		return
	}
	s.mu.Lock()
	done := s.snap.done
	s.mu.Unlock()
	if done != nil {
		<-done
	}
	s.mu.Lock()
	if s.gate.unsnapped > 0 && s.core.Available() {
		s.startSnapshot(1)
	}
	done = s.snap.done
	s.mu.Unlock()
	if done != nil {
		<-done
	}
}

// closeCluster stops a member's Raft. A stop of a leader ends its
// leadership; the others elect a new one.
func (s *Server) closeCluster() {
	if s.cl != nil && s.cl.node != nil {
		s.cl.close()
	}
}

func (s *Server) closeStore() error {
	if s.store == nil {
		return nil
	}
	err := s.store.Close()
	s.stopReleaser()
	if err != nil {
		s.log.Error("cannot close the log", "err", err)
	}
	return err
}

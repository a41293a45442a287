package maincontrol

import "sync/atomic"

// durableHandoff carries the log's durable mark from its writer goroutine
// to whoever holds Server.mu next. The writer must not wait for the lock.
// The loop holds it for a whole turn, and a writer waiting on it writes
// and fsyncs nothing meanwhile. Every record appended in that time would
// wait a turn longer, and so would the replies held for it. So the writer
// only stores the mark. The loop releases the held frames at the start of
// its next callback, and the releaser goroutine does it while the loop is
// idle.
type durableHandoff struct {
	lsn  atomic.Uint64
	kick chan struct{} // one pending kick is enough: the mark is the latest
	stop chan struct{}
	done chan struct{}
}

// onDurable runs on the log's writer goroutine. It never blocks.
func (s *Server) onDurable(lsn uint64) {
	s.durable.lsn.Store(lsn)
	select {
	case s.durable.kick <- struct{}{}:
	default:
	}
}

// takeDurable releases the frames the log made durable since the last
// look, and tells the core. It runs with s.mu held.
func (s *Server) takeDurable() {
	if lsn := s.durable.lsn.Load(); lsn > s.gate.durableLSN && s.gate.release(lsn) {
		s.core.Durable(lsn)
	}
}

// startReleaser starts the goroutine that takes the durable mark when no
// callback of the loop comes first.
func (s *Server) startReleaser() {
	d := &s.durable
	d.kick, d.stop, d.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(d.done)
		for {
			select {
			case <-d.kick:
			case <-d.stop:
				return
			}
			s.mu.Lock()
			s.takeDurable()
			wakes := s.wakes.take(nil)
			s.mu.Unlock()
			wake(wakes)
		}
	}()
}

// stopReleaser ends the releaser, once the log is closed.
func (s *Server) stopReleaser() {
	if s.durable.stop == nil {
		return
	}
	close(s.durable.stop)
	<-s.durable.done
	s.durable.stop = nil
}

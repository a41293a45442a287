package maincontrol

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// tickMisses is how many watchTicks rounds in a row may pass without a
// tick before the event loops count as gone. That is 10 s with the default
// idle tick. It counts rounds, not time. A process stopped for a minute,
// by SIGSTOP or a debugger, wakes to one round without a tick.
const tickMisses = 2

// timers is the state of the server's timed work. That is gnet's ticker,
// the early tick and the watch on both. Server.mu guards it, except the
// counters.
type timers struct {
	ticks atomic.Uint64 // OnTick calls begun, for watchTicks
	// inTick is set while an OnTick call runs or waits for the server's
	// lock. A ticker inside OnTick is alive, however long a busy loop
	// keeps the lock.
	inTick atomic.Bool
	// wakeups counts the times the server's timers woke it: ticks, early
	// ticks and rounds of watchTicks (apollo11_timer_wakeups_total).
	wakeups  atomic.Uint64
	lastTick time.Time   // when OnTick last had the core
	tickAt   time.Time   // when gnet's ticker calls OnTick next
	earlyAt  time.Time   // when early fires, zero if not armed
	early    *time.Timer // a tick before gnet's next (wantTick)
}

// OnTick runs the core's timers and starts snapshots when due. gnet's
// ticker calls it, then sleeps for the delay it returns. That delay lasts
// until the next deadline of the server or the core, at most the idle
// tick. An input that brings a deadline sooner gets an early tick
// (wantTick).
func (s *Server) OnTick() (time.Duration, gnet.Action) {
	s.timers.ticks.Add(1)
	s.timers.wakeups.Add(1)
	s.timers.inTick.Store(true)
	defer s.timers.inTick.Store(false)
	s.mu.Lock()
	if s.stopping {
		// No input is read during a stop: the executors' heartbeats wait
		// unread, and timers run on would declare them lost (and retry
		// their running tasks) while they are healthy. Nothing moves now.
		s.mu.Unlock()
		return s.cfg.TickInterval, gnet.None
	}
	s.takeDurable()
	planned := s.timers.tickAt
	wakes := s.tick(planned)
	now := s.now()
	d := s.untilDue(now)
	s.timers.tickAt = now.Add(d)
	if !s.timers.earlyAt.IsZero() && !s.timers.earlyAt.Before(s.timers.tickAt) {
		s.timers.early.Stop() // this tick did its work
		s.timers.earlyAt = time.Time{}
	}
	s.mu.Unlock()
	wake(wakes)
	if s.cfg.OnTick != nil {
		s.cfg.OnTick()
	}
	return d, gnet.None
}

// tick is one round of the server's and the core's timed work. planned
// is when it was due. It runs with s.mu held. It returns the connections
// to wake once the lock is released.
func (s *Server) tick(planned time.Time) []*conn {
	s.noteStall(planned)
	s.flow.tick(s.gate.conns)
	s.core.Tick()
	s.maybeSnapshot()
	return s.wakes.take(nil)
}

// earlyTick is the tick wantTick arms for a deadline before gnet's next.
func (s *Server) earlyTick() {
	s.timers.wakeups.Add(1)
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return
	}
	planned := s.timers.earlyAt
	s.timers.earlyAt = time.Time{}
	wakes := s.tick(planned)
	s.wantTick()
	s.mu.Unlock()
	wake(wakes)
}

// wantTick arms an early tick when the next deadline comes before gnet's
// next tick. An input may have brought one, with a short delay or timeout,
// or an output left blocked. Otherwise it is cheap and reads no clock. It
// runs with s.mu held, after every input.
func (s *Server) wantTick() {
	due := s.nextDue()
	if !due.Before(s.timers.tickAt) || !s.timers.earlyAt.IsZero() && !due.Before(s.timers.earlyAt) {
		return
	}
	if s.timers.early == nil {
		s.timers.early = time.AfterFunc(time.Hour, s.earlyTick)
	}
	s.timers.earlyAt = due
	s.timers.early.Reset(max(due.Sub(s.now()), 0))
}

// untilDue is how long gnet's ticker sleeps after a tick that ends at
// now. It sleeps until the next deadline, at most the idle tick. It runs
// with s.mu held.
func (s *Server) untilDue(now time.Time) time.Duration {
	idle := max(s.cfg.IdleTick, s.cfg.TickInterval)
	return min(max(s.nextDue().Sub(now), time.Millisecond), idle)
}

// nextDue is dueAt, except for work due before the last tick that is due
// still. The tick did not clear its condition. Such work is looked at again
// TickInterval later, not in a loop. It runs with s.mu held.
func (s *Server) nextDue() time.Time {
	due := s.dueAt()
	if !due.After(s.timers.lastTick) {
		return s.timers.lastTick.Add(s.cfg.TickInterval)
	}
	return due
}

// dueAt is when a tick next has work. Some states need a tick every
// TickInterval. They are blocked or judged outputs, crowding incomplete
// frames, and a snapshot running or owed by the count. Otherwise it is the
// earliest of the core's next deadline, the look at incomplete frames and
// the snapshot interval. It is far in the future when nothing is due. It
// runs with s.mu held.
func (s *Server) dueAt() time.Time {
	if s.flow.busy() || s.snap.running || s.store != nil && s.gate.unsnapped >= s.cfg.SnapshotEvery {
		return s.timers.lastTick.Add(s.cfg.TickInterval)
	}
	due := time.Unix(0, math.MaxInt64)
	if at, ok := s.core.NextTickAt(); ok {
		if at == math.MinInt64 {
			return time.Time{}
		}
		due = time.UnixMilli(at)
	}
	if at, ok := s.flow.nextLook(); ok {
		due = minTime(due, at)
	}
	if s.store != nil && s.gate.unsnapped > 0 {
		due = minTime(due, s.gate.firstUnsnapped.Add(s.cfg.SnapshotInterval))
	}
	return due
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// watchTicks returns a channel closed when gnet's ticker stops calling
// OnTick while this process runs. It looks every so often, and stops
// when the acceptor stops for a stop under way. The ticker ends when an
// event loop ends on an error. gnet's Client runs the loops (accept.go)
// and gives no other sign of it. Without this watch, the connections on
// that loop would hang while the main control looked alive.
func (s *Server) watchTicks(every time.Duration) <-chan struct{} {
	died := make(chan struct{})
	go func() {
		last, misses := s.timers.ticks.Load(), 0
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.acceptor.stop:
				return
			case <-t.C:
			}
			s.timers.wakeups.Add(1)
			now := s.timers.ticks.Load()
			if now != last || s.timers.inTick.Load() {
				last, misses = now, 0
				continue
			}
			if misses++; misses >= tickMisses {
				s.log.Error("the event loops stopped ticking", "rounds", misses, "every", every)
				close(died)
				return
			}
		}
	}()
	return died
}

// watchEvery is the watch's round of five idle ticks. So the watch wakes
// the process far less often than the ticks do. A timer pushed back at
// every tick would not help. The runtime still wakes at its first time.
func (c *Config) watchEvery() time.Duration {
	idle := max(c.IdleTick, c.TickInterval)
	return 5 * idle
}

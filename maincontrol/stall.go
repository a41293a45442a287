package maincontrol

import "time"

// stallGap is how late a tick may come before the core is told it could
// not run (core.Core.Stalled). A tick this late means the loop, or the
// whole process, was held up. A long frame, a host that took the CPU away
// or a debugger can do that.
const stallGap = time.Second

// noteStall tells the core how long it could not run, if a tick came
// long after it was planned. Executors whose heartbeats waited unread
// meanwhile were not silent. They get the whole time since the last tick
// back. That exceeds the stall by at most one idle sleep, which only
// delays noticing an executor that died just then. It runs with s.mu
// held, at the start of a tick planned for planned.
func (s *Server) noteStall(planned time.Time) {
	now := s.now()
	last := s.timers.lastTick
	s.timers.lastTick = now
	if last.IsZero() || planned.IsZero() {
		return
	}
	if late := now.Sub(planned); late > stallGap {
		gap := now.Sub(last)
		s.log.Warn("main control stalled: executors get the time back", "for", late.Round(time.Millisecond))
		s.core.Stalled(gap)
	}
}

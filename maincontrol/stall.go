package maincontrol

import "time"

// stallGap is the time between two ticks past which the core is told it
// could not run (core.Core.Stalled). Ticks come every TickInterval (20 ms
// by default); a gap this long means the loop, or the whole process, was
// held up: a long frame, a host that took the CPU away, a debugger.
const stallGap = time.Second

// noteStall tells the core how long it could not run since the last tick,
// if that was long: executors whose heartbeats waited unread meanwhile
// were not silent. Called with s.mu held, at the start of a tick.
func (s *Server) noteStall() {
	now := s.now()
	last := s.lastTick
	s.lastTick = now
	if last.IsZero() {
		return
	}
	if gap := now.Sub(last); gap > stallGap {
		s.log.Warn("main control stalled: executors get the time back", "for", gap.Round(time.Millisecond))
		s.core.Stalled(gap - s.cfg.TickInterval)
	}
}

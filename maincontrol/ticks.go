package maincontrol

import "time"

// tickMisses is how many watchTicks rounds in a row may pass without a
// tick before the event loops count as gone. Rounds, not a duration: a
// process stopped for a minute (SIGSTOP, a debugger) wakes to one round
// without a tick, not to a minute of them.
const tickMisses = 10

// watchTicks returns a channel closed when gnet's ticker stops calling
// OnTick while this process runs, looking every so often; it stops
// looking when the acceptor stops (a stop under way). The ticker ends
// when an event loop ends on an error, and gnet's Client, which runs the
// loops (accept.go), gives no other sign of it: without this, the
// connections on that loop would hang while the main control looked
// alive.
func (s *Server) watchTicks(every time.Duration) <-chan struct{} {
	died := make(chan struct{})
	go func() {
		last, misses := s.ticks.Load(), 0
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.acceptor.stop:
				return
			case <-t.C:
			}
			now := s.ticks.Load()
			if now != last {
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

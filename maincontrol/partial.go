package maincontrol

import (
	"time"

	"github.com/panjf2000/gnet/v2"
)

// notePartial records whether cn's input ends in an incomplete frame
// once readFrames is done with it (more: it stopped early, so what is
// left may be whole frames), and cuts it off when checkPartials found it
// stalled. The clock restarts only when the buffered input changed: a
// wake without new bytes is no progress. A paused or output-blocked
// connection's input is held by the server, not left incomplete by the
// peer. Called with s.mu
// held, on cn's event loop.
func (s *Server) notePartial(cn *conn, gc gnet.Conn, more bool) {
	n := gc.InboundBuffered()
	_, blocked := s.outBlocked[cn] // whole frames left unread on purpose
	incomplete := !more && n > 0 && !blocked && !cn.paused && !cn.closing && !cn.dead
	stalled := cn.stalled
	cn.stalled = false
	switch {
	case !incomplete:
		if cn.partial != 0 {
			cn.partial = 0
			delete(s.partials, cn)
		}
	case n != cn.partial:
		cn.partial, cn.partialSince = n, s.now()
		s.partials[cn] = struct{}{}
	case stalled:
		s.log.Info("frame left incomplete: connection closed", "peer", cn.id, "remote", gc.RemoteAddr(),
			"buffered", n, "for", s.now().Sub(cn.partialSince).Round(time.Second))
		cn.partial = 0
		s.cutOff(cn, gc, "frame left incomplete for "+s.cfg.FrameStallTimeout.String())
	}
}

// checkPartials marks the connections whose incomplete frame has not
// grown for FrameStallTimeout and wakes them, so that their own event
// loop cuts them off (notePartial): gnet would hold each one's partial
// frame, up to the max frame, for as long as it stays open. It looks a
// few times per timeout, not at every tick. Called with s.mu held.
func (s *Server) checkPartials() {
	now := s.now()
	if len(s.partials) == 0 || now.Sub(s.partialsSeen) < min(time.Second, s.cfg.FrameStallTimeout/4) {
		return
	}
	s.partialsSeen = now
	for cn := range s.partials {
		if now.Sub(cn.partialSince) >= s.cfg.FrameStallTimeout {
			delete(s.partials, cn)
			cn.stalled = true
			s.markDirty(cn)
		}
	}
}

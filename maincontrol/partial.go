package maincontrol

import (
	"slices"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// notePartial records whether cn's input ends in an incomplete frame
// once readFrames is done with it (more: it stopped early, so what is
// left may be whole frames), and cuts it off when checkPartials picked it
// and it made no progress since. Progress is new bytes or a frame
// handled (a wake without either is none). A paused or output-blocked
// connection's input is held by the server, not left incomplete by the
// peer. Called with s.mu held, on cn's event loop.
func (s *Server) notePartial(cn *conn, gc gnet.Conn, more bool) {
	n := gc.InboundBuffered()
	_, blocked := s.outBlocked[cn] // whole frames left unread on purpose
	incomplete := !more && n > 0 && !blocked && !cn.paused && !cn.closing && !cn.dead
	why := cn.partialCut
	cn.partialCut = ""
	switch {
	case !incomplete:
		s.setPartial(cn, 0)
	case n != cn.partial || cn.asked:
		s.setPartial(cn, n)
		cn.partialSince = s.now()
	case why != "":
		s.log.Info("frame left incomplete: connection closed", "peer", cn.id, "remote", gc.RemoteAddr(),
			"why", why, "buffered", n, "for", s.now().Sub(cn.partialSince).Round(time.Second))
		s.setPartial(cn, 0)
		s.cutOff(cn, gc, why)
	}
}

// setPartial sets the bytes cn holds in an incomplete frame (0: none),
// keeping Server.partials and Server.partialTotal in step.
func (s *Server) setPartial(cn *conn, n int) {
	s.partialTotal += n - cn.partial
	cn.partial = n
	if n == 0 {
		delete(s.partials, cn)
	} else {
		s.partials[cn] = struct{}{}
	}
}

// checkPartials picks connections to cut off for their incomplete frames
// and wakes them, so that their own event loop cuts those that made no
// progress meanwhile (notePartial): those whose frame has not grown for
// FrameStallTimeout, and, while all of them together hold more than
// MaxPartialTotal, those that grew least recently until the rest fit.
// gnet holds each one's partial frame, up to the max frame, for as long
// as it stays open; a peer adding a byte now and then would dodge the
// timeout alone. It looks a few times per timeout, and at every tick
// while over the total (new connections can each bring a max frame
// within a second). Called with s.mu held.
func (s *Server) checkPartials() {
	now := s.now()
	crowded := s.partialTotal > s.cfg.MaxPartialTotal
	if len(s.partials) == 0 || !crowded && now.Sub(s.partialsSeen) < min(time.Second, s.cfg.FrameStallTimeout/4) {
		return
	}
	s.partialsSeen = now
	pick := func(cn *conn, why string) {
		delete(s.partials, cn) // back if it makes progress
		cn.partialCut = why
		s.markDirty(cn)
	}
	held := s.partialTotal
	var rest []*conn
	for cn := range s.partials {
		if now.Sub(cn.partialSince) >= s.cfg.FrameStallTimeout {
			pick(cn, "frame left incomplete for "+s.cfg.FrameStallTimeout.String())
			held -= cn.partial
		} else if crowded {
			rest = append(rest, cn)
		}
	}
	if held <= s.cfg.MaxPartialTotal {
		return
	}
	slices.SortFunc(rest, func(a, b *conn) int { return a.partialSince.Compare(b.partialSince) })
	for _, cn := range rest {
		if held <= s.cfg.MaxPartialTotal {
			break
		}
		pick(cn, "too much held in incomplete frames")
		held -= cn.partial
	}
}

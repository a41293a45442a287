package maincontrol

import (
	"slices"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// Incomplete frames. gnet holds each connection's partial frame, up to the
// max frame, for as long as the connection stays open, so checkPartials
// picks connections to judge: one whose frame made no progress for
// FrameStallTimeout (judged at once: cut unless it progressed since), and,
// while all connections together hold more than MaxPartialTotal, those
// whose frame grew least recently (judged after partialGrace: cut unless
// partialMinProgress more of it arrived). An uploader sending a big frame
// steadily is spared; a peer adding a byte now and then is not. The grace
// is short because a peer opening connections as fast as it can, each
// with a max frame, holds about its rate times the grace.

// A connection picked for crowding must receive partialMinProgress more
// of its frame within partialGrace (16 KiB/s) to be spared.
const (
	partialGrace       = 250 * time.Millisecond
	partialMinProgress = 4 << 10
)

// notePartial records whether cn's input ends in an incomplete frame
// once readFrames is done with it (more: it stopped early, so what is
// left may be whole frames; handled: it handled a frame), and judges it when checkPartials picked it
// and its time came. Progress is new bytes or a frame handled (a wake
// without either is none). A paused or output-blocked connection's input
// is held by the server, not left incomplete by the peer. Called with
// s.mu held, on cn's event loop.
func (s *Server) notePartial(cn *conn, gc gnet.Conn, more, handled bool) {
	n := gc.InboundBuffered()
	if n == 0 && cn.partial == 0 && cn.partialCut == "" {
		return // the usual turn: nothing left over, nothing to judge
	}
	_, blocked := s.outBlocked[cn] // whole frames left unread on purpose
	incomplete := !more && n > 0 && !blocked && !cn.paused && !cn.closing && !cn.dead
	now := s.now()
	if why := cn.partialCut; why != "" && !now.Before(cn.partialDue) {
		got := cn.consumed + n - cn.partialMark
		cn.partialCut = ""
		if incomplete && got < cn.partialNeed {
			s.log.Info("frame left incomplete: connection closed", "peer", cn.id, "remote", gc.RemoteAddr(),
				"why", why, "buffered", n, "for", now.Sub(cn.partialSince).Round(time.Second))
			s.setPartial(cn, 0)
			s.cutOff(cn, gc, why)
			return
		}
	}
	switch {
	case !incomplete:
		cn.partialCut = ""
		s.setPartial(cn, 0)
	case n != cn.partial || handled:
		s.setPartial(cn, n)
		cn.partialSince = now
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

// checkPartials picks connections to judge for their incomplete frames
// (see above) and wakes those whose time came, so that their own event
// loop judges them (notePartial). It looks a few times per timeout, and
// at every tick while over the total (new connections can each bring a
// max frame within a second). Called with s.mu held.
func (s *Server) checkPartials() {
	now := s.now()
	crowded := s.partialTotal > s.cfg.MaxPartialTotal
	if len(s.partials) == 0 || !crowded && now.Sub(s.partialsSeen) < min(time.Second, s.cfg.FrameStallTimeout/4) {
		return
	}
	s.partialsSeen = now
	pick := func(cn *conn, why string, due time.Time, need int) {
		cn.partialCut, cn.partialDue, cn.partialNeed = why, due, need
		cn.partialMark = cn.consumed + cn.partial
	}
	held := s.partialTotal
	var rest []*conn
	for cn := range s.partials {
		switch {
		case cn.partialCut != "":
			held -= cn.partial
			if !now.Before(cn.partialDue) {
				s.markDirty(cn)
			}
		case now.Sub(cn.partialSince) >= s.cfg.FrameStallTimeout:
			pick(cn, "frame left incomplete for "+s.cfg.FrameStallTimeout.String(), now, 1)
			held -= cn.partial
			s.markDirty(cn)
		case crowded:
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
		pick(cn, "too much held in incomplete frames", now.Add(partialGrace), partialMinProgress)
		held -= cn.partial
	}
}

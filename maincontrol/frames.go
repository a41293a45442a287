package maincontrol

import (
	"math/bits"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/wire"
)

// readFrames handles whole frames until only a partial frame is left. It
// stops early once this round's replies and what gnet still holds unsent
// pass the connection's share (overShare). A burst of small requests with
// large replies must not make one call buffer unbounded output and stall
// the loop. Nor may it pile a round's worth on top of a full buffer. It
// also stops once it took Config.ReadChunk of input, a turn's share. A
// backlog of input is handled a share per turn, as fresh input is. So a
// quiet client waits for one share per busy connection, not a budget
// each. And it stops after Config.ReadBudget. One connection's pipelined
// burst must not hold the core, the ticker and every other connection for
// seconds. An executor whose heartbeats wait unread behind it would be
// declared lost. It returns true to read on once its replies are written.
// It returns false when nothing whole is left, or when only the peer's
// reading can let it go on. The tick then looks again.
func (s *Server) readFrames(cn *conn, gc gnet.Conn) bool {
	s.core.HoldClock()
	defer s.core.ReleaseClock()
	var start time.Time // from the readBudgetCheck-th frame: most rounds are shorter
	until := cn.flow.consumed + turnShare(s.cfg.ReadChunk)
	for n := 1; !cn.closing && !cn.dead && !s.stopping; n++ {
		if cn.flow.consumed >= until {
			return gc.InboundBuffered() > 0
		}
		if s.flow.overShare(cn, len(cn.out)+gc.OutboundBuffered()) {
			if len(cn.out) == 0 {
				// Only the peer's reading can change this, and gnet
				// says nothing when it reads: look again at the next
				// tick rather than wake at once, in a loop.
				s.flow.outBlocked[cn] = struct{}{}
				return false
			}
			return true // write this round's replies first
		}
		if n%readBudgetCheck == 0 {
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) > s.cfg.ReadBudget {
				return true
			}
		}
		if cn.held > s.cfg.MaxInflight {
			if !cn.flow.paused {
				s.log.Debug("reading paused: replies awaiting disk", "peer", cn.id, "held", cn.held)
			}
			if s.flow.pause(cn, gc.InboundBuffered()) {
				s.log.Warn("peer sent too much while paused: connection closed", "peer", cn.id,
					"buffered", cn.flow.pausedBytes, "all_paused", s.flow.pausedBytes)
				s.cutOff(cn, gc, "too many requests awaiting disk")
			}
			return false
		}
		s.flow.resume(cn)
		hdr, err := gc.Peek(wire.HeaderLen)
		if err != nil {
			return false // fewer than 4 bytes
		}
		size, _, err := s.dec.Header(hdr)
		if err != nil {
			s.refuseDecode(cn, gc, err)
			return false
		}
		if gc.InboundBuffered() < wire.HeaderLen+size {
			return false
		}
		frame, err := gc.Peek(wire.HeaderLen + size)
		if err != nil {
			return false
		}
		m, n, err := s.dec.Decode(frame)
		if err != nil {
			s.refuseDecode(cn, gc, err)
			return false
		}
		if s.gate.debug {
			s.gate.logFrame("in", cn, frame[wire.HeaderLen:])
		}
		s.core.Handle(cn.id, m)
		if cn.waiting.in {
			s.noteGreeted(cn)
		}
		cn.flow.consumed += n
		_, _ = gc.Discard(n)
	}
	return false
}

// turnShare is the input one turn of a connection handles: what gnet reads
// from its socket in a turn, ReadChunk rounded as gnet rounds it. A
// connection with input left is woken, so it handles at least what gnet
// read before the next read. Its backlog does not grow.
func turnShare(readChunk int) int {
	if readChunk <= 1<<10 {
		return 1 << 10
	}
	return 1 << bits.Len(uint(readChunk-1))
}

// refuseDecode answers a framing or payload error and closes. The peer's
// framing can no longer be trusted (spec section 2).
func (s *Server) refuseDecode(cn *conn, gc gnet.Conn, err error) {
	s.log.Info("protocol error: connection closed", "peer", cn.id, "remote", gc.RemoteAddr(), "err", err)
	frame, _ := wire.Refusal(err)
	s.closeWith(cn, gc, frame)
}

// cutOff closes a connection now. Its error frame follows what was already
// released to it, not its replies awaiting disk. Those wait for the disk,
// which may be the very thing that stalled. Meanwhile gnet goes on
// buffering what the peer sends. Its unconfirmed replies are dropped
// (docs/protocol.md, "Bounded buffers").
func (s *Server) cutOff(cn *conn, gc gnet.Conn, msg string) {
	cn.out = append(cn.out, wire.ErrorFrame(wire.CodeBadRequest, msg)...)
	cn.closing, cn.closeAfter = true, true
	s.flow.notePaused(cn, 0)
	s.wakes.mark(cn)
	s.core.Closed(cn.id)
	_, _ = gc.Discard(gc.InboundBuffered())
}

// closeWith sends a last frame (when not nil) and closes the connection.
func (s *Server) closeWith(cn *conn, gc gnet.Conn, last []byte) {
	if last != nil {
		s.gate.Send(cn.id, last, core.WaitDurable)
	}
	s.gate.Close(cn.id)
	s.core.Closed(cn.id)
	_, _ = gc.Discard(gc.InboundBuffered())
}

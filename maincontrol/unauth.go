package maincontrol

import (
	"github.com/apollo11/apollo11/wire"
)

// Some connections are not yet through their handshake, which is hello or
// register with the token's MAC when one is set. They have a cap of their
// own, --max-unauth-conns, and never crowd out those that are through. At
// that cap, or at --max-conns, a newcomer takes the place of the one that
// has waited longest. A peer without the token can then hold at most that
// many descriptors, each for at most the handshake timeout. A newcomer is
// refused only when every connection has passed its handshake. It is
// pushed out only by as many others arriving after it. An honest
// handshake takes one round trip. A connection still in its TLS
// handshake counts as one awaiting its handshake (tlsterm.go).

// unauthQueue lists the connections awaiting their handshake, oldest
// first, linked through conn.waiting.
type unauthQueue = fifo[*conn]

// makeRoom reports whether a newcomer may be taken in. When either cap is
// reached, it first closes the connection longest in its handshake. It
// runs with s.mu held.
func (s *Server) makeRoom() bool {
	full := len(s.gate.conns)-s.evicting+s.shakes.n >= s.cfg.MaxConns
	if !full && s.unauth.n+s.shakes.n < s.cfg.MaxUnauthConns {
		return true
	}
	if s.evictShake() { // one in its TLS handshake is the earliest stage
		return true
	}
	victim := s.unauth.head
	if victim == nil {
		return false // every connection is through its handshake
	}
	s.evict(victim)
	return true
}

// evict closes a connection still in its handshake, telling it why. It
// may be on another event loop, so it is woken to close, its input left
// unread. Until it is gone, it does not count against --max-conns.
func (s *Server) evict(cn *conn) {
	s.unauth.remove(cn)
	cn.evicted = true
	s.evicting++
	if !cn.closing {
		cn.out = append(cn.out, wire.ErrorFrame(wire.CodeUnavailable,
			"too many connections awaiting their handshake (--max-unauth-conns); try again")...)
	}
	cn.closing, cn.closeAfter = true, true
	s.flow.notePaused(cn, 0)
	s.wakes.mark(cn)
	s.core.Closed(cn.id)
}

// noteGreeted takes cn off the handshake queue once the core has let it
// in. Called with s.mu held, after each frame of a connection on it.
func (s *Server) noteGreeted(cn *conn) {
	if s.core.Greeted(cn.id) {
		s.unauth.remove(cn)
	}
}

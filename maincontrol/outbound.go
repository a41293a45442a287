package maincontrol

import (
	"cmp"
	"slices"
)

// noteUnsent records that gnet holds unsent bytes for cn after its
// latest write, and says why cn must be cut off ("" if it need not): it
// holds more than MaxOutbound; or all connections together hold too much
// and either it was picked by relieveOutbound and has not sent even half
// of what it held then, or it asked for more (this round handled its
// requests) while holding an eighth of MaxOutbound. The second cuts a
// flood of idle peers asking for big replies as it comes, not a tick
// later with their replies built; a peer that only receives (an executor
// sent tasks, a client its done replies) is left to relieveOutbound,
// which picks those holding the most. While over the total, readFrames
// also stops reading a connection holding an eighth of MaxOutbound.
// Called with s.mu held, on cn's event loop: gnet's count of a
// connection is only read there.
func (s *Server) noteUnsent(cn *conn, unsent int) string {
	grew := unsent > cn.unsent
	s.unsentTotal += unsent - cn.unsent
	cn.unsent = unsent
	picked := cn.evictAt
	cn.evictAt = 0
	over := s.unsentTotal > s.cfg.MaxOutboundTotal
	switch {
	case unsent > s.cfg.MaxOutbound:
		return "peer is not reading"
	case over && picked > 0 && unsent >= picked/2,
		over && cn.asked && grew && unsent > s.cfg.MaxOutbound/8:
		return "peer is not reading while all peers hold too much unsent output"
	}
	return ""
}

// relieveOutbound picks, when all connections together hold more unsent
// output than MaxOutboundTotal, those holding the most until the rest
// would fit, and wakes them: their own event loop looks again and cuts
// those that have not caught up (noteUnsent). Each connection is kept
// under MaxOutbound, but many idle ones that asked for large replies and
// never read would otherwise hold that much each for as long as they
// like. The counts are as of each connection's latest write, so a peer
// that has read since is spared when woken. Called with s.mu held, at
// each tick; it scans the connections only while over the total.
func (s *Server) relieveOutbound() {
	if s.unsentTotal <= s.cfg.MaxOutboundTotal {
		return
	}
	var heavy []*conn
	for _, cn := range s.conns {
		if cn.unsent > 0 && cn.evictAt == 0 && !cn.dead {
			heavy = append(heavy, cn)
		}
	}
	slices.SortFunc(heavy, func(a, b *conn) int { return cmp.Compare(b.unsent, a.unsent) })
	over := s.unsentTotal - s.cfg.MaxOutboundTotal
	for _, cn := range heavy {
		if over <= 0 {
			break
		}
		cn.evictAt = cn.unsent
		over -= cn.unsent
		s.markDirty(cn)
	}
}

// wakeBlocked wakes, at each tick, the connections readFrames stopped
// reading because all connections held too much unsent output and they
// held their share: each looks again, on its own loop, at what it holds
// now. Called with s.mu held.
func (s *Server) wakeBlocked() {
	for cn := range s.outBlocked {
		delete(s.outBlocked, cn)
		if !cn.dead {
			s.markDirty(cn)
		}
	}
}

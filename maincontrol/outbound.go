package maincontrol

import (
	"cmp"
	"slices"
)

// noteUnsent records that gnet holds unsent bytes for cn after its
// latest write, and says why cn must be cut off ("" if it need not): it
// holds more than MaxOutbound; or all connections together hold too much
// and it was picked by relieveOutbound and has not sent even half of what
// it held then, or it is adding to an eighth of MaxOutbound or more (a
// flood of requests for big replies is cut at once, not at the next
// tick).
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
		over && grew && unsent > s.cfg.MaxOutbound/8:
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

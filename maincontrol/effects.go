package maincontrol

import (
	"math"

	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/wire"
)

// The Server is the core's Effects. These methods run with s.mu held, on
// whichever goroutine drives the core.
var (
	_ core.Effects = (*Server)(nil)
	_ core.Backlog = (*Server)(nil)
)

// Record appends a change record to the log and returns its LSN.
func (s *Server) Record(payload []byte) uint64 {
	if s.store == nil {
		return s.lastLSN
	}
	lsn := s.store.Append(payload)
	if lsn == 0 {
		// The log is closed (a stop under way): the change is in no
		// record, so no frame after it may go out.
		lsn = math.MaxUint64
	}
	s.lastLSN = lsn
	if s.sinceSnapshot == 0 {
		s.firstUnsnapped = s.now()
	}
	s.sinceSnapshot++
	return lsn
}

// Send queues a frame, held until every record appended so far is durable
// unless its wait lets it out sooner (see core.Wait).
func (s *Server) Send(peer core.PeerID, frame []byte, wait core.Wait) {
	cn := s.lookup(peer)
	if cn == nil || cn.dead || cn.closeAfter {
		return
	}
	if s.core != nil && s.core.Debug() {
		s.logFrame("out", cn, frame[wire.HeaderLen:])
	}
	if s.lastLSN <= s.durableLSN || s.sendsNow(cn, wait) {
		cn.out = append(cn.out, frame...)
		s.markDirty(cn)
		return
	}
	s.hold(&s.held, heldFrame{cn: cn, lsn: s.lastLSN, confirms: wait == core.WaitConfirm}, frame)
}

// SendTask queues a task frame, held until the log is durable up to
// after. It passes the connection's frames held for later records (its
// own dispatch record, result_acks), but not those of a task frame held
// before it.
func (s *Server) SendTask(peer core.PeerID, frame []byte, after uint64) {
	cn := s.lookup(peer)
	if cn == nil || cn.dead || cn.closeAfter {
		return
	}
	if s.core != nil && s.core.Debug() {
		s.logFrame("out", cn, frame[wire.HeaderLen:])
	}
	if after <= s.durableLSN && cn.gated == 0 {
		cn.out = append(cn.out, frame...)
		s.markDirty(cn)
		return
	}
	s.hold(&s.gated, heldFrame{cn: cn, lsn: after, confirms: true, gated: true}, frame)
	cn.gated++
}

// hold puts a frame (or close) in q, after every frame held before it.
func (s *Server) hold(q *heldQueue, h heldFrame, frame []byte) {
	s.heldOrder++
	h.order = s.heldOrder
	q.push(h, frame)
	h.cn.held++
}

// sendsNow reports whether a frame may pass records that are not yet
// durable.
func (s *Server) sendsNow(cn *conn, wait core.Wait) bool {
	switch wait {
	case core.WaitNothing:
		// Behind a held frame it would overtake it; held, it is
		// released with the frames before it.
		return cn.held == 0
	case core.WaitDurable:
		// While the log cannot be written nothing becomes durable:
		// errors (code=unavailable), pongs and reads go out, so that
		// peers are answered instead of hanging until the disk recovers.
		return s.core != nil && !s.core.Available()
	default:
		return false
	}
}

// lookup finds a peer's connection. Replies come in runs to one peer (a
// batch of submits, a batch of results), so the last one found is kept:
// peer ids are never reused, and a closed connection is marked dead.
func (s *Server) lookup(peer core.PeerID) *conn {
	if s.lastConn != nil && s.lastConn.id == peer {
		return s.lastConn
	}
	cn := s.conns[peer]
	if cn != nil {
		s.lastConn = cn
	}
	return cn
}

// Close closes a connection after the frames queued before.
func (s *Server) Close(peer core.PeerID) {
	cn := s.conns[peer]
	if cn == nil || cn.dead {
		return
	}
	cn.closing = true
	if cn.held == 0 {
		cn.closeAfter = true
		s.markDirty(cn)
		return
	}
	// At lastLSN, after every gate of the task frames held before it.
	s.hold(&s.held, heldFrame{cn: cn, lsn: s.lastLSN, close: true}, nil)
}

func (s *Server) markDirty(cn *conn) {
	if !cn.queued {
		cn.queued = true
		s.dirty = append(s.dirty, cn)
	}
}

// releaseHeld moves frames durable at lsn to their connections, from both
// queues in the order they were sent, and tells the core.
func (s *Server) releaseHeld(lsn uint64) {
	if lsn <= s.durableLSN {
		return
	}
	s.durableLSN = lsn
	for {
		a, b := s.held.ready(lsn), s.gated.ready(lsn)
		switch {
		case a != nil && (b == nil || a.order < b.order):
			s.held.pop(s.deliver)
		case b != nil:
			s.gated.pop(s.deliver)
		default:
			s.held.compact()
			s.gated.compact()
			if s.core != nil {
				s.core.Durable(lsn)
			}
			return
		}
	}
}

// releaseUnconfirming releases the held frames that need not wait for the
// disk (see Send), when the log has just failed: the replies and errors
// held before the failure must not wait for its recovery. A connection's
// close stays held behind its confirmations.
func (s *Server) releaseUnconfirming() {
	blocked := map[*conn]bool{}
	s.held.extract(func(h *heldFrame, _ []byte) bool {
		if h.close {
			return blocked[h.cn] || h.cn.gated > 0
		}
		if h.confirms {
			blocked[h.cn] = true
			return true
		}
		return false
	}, s.deliver)
}

// deliver hands a released frame (or close) to its connection.
func (s *Server) deliver(h *heldFrame, frame []byte) {
	cn := h.cn
	cn.held--
	if h.gated {
		cn.gated--
	}
	if cn.dead {
		return
	}
	if h.close {
		cn.closeAfter = true
	} else if !cn.closeAfter {
		cn.out = append(cn.out, frame...)
	}
	s.markDirty(cn)
}

// takeWakes returns the connections with output waiting, other than
// self, and clears the list. They stay queued until their OnTraffic runs.
func (s *Server) takeWakes(self *conn) []*conn {
	if len(s.dirty) == 0 {
		return nil
	}
	w := make([]*conn, 0, len(s.dirty))
	for _, cn := range s.dirty {
		if cn != self && cn.queued && !cn.dead {
			w = append(w, cn)
		}
	}
	s.dirty = s.dirty[:0]
	return w
}

package core

import (
	"strconv"

	"github.com/apollo11/apollo11/wire"
)

// A connection's share of --max-pending (Config.MaxPendingPerConn). The
// quota is per connection, not per client= name. The name is whatever a
// peer says, so a cap by name would let any peer use another client's
// share. Tasks outlive their connection. Once it closes, they count
// against --max-pending only. A restart forgets who submitted what.

// connRoom reports whether p may submit one more task under its share,
// and answers the submit with queue_full when it may not.
func (c *Core) connRoom(p *peer, req string) bool {
	limit := c.cfg.MaxPendingPerConn
	if limit == 0 || p.pending < limit {
		return true
	}
	c.sendError(p, req, wire.CodeQueueFull, "queue full for this connection: "+strconv.Itoa(p.pending)+
		" of its tasks have not ended, --max-pending-per-conn "+strconv.Itoa(limit)+"; retry when some end")
	return false
}

// submitted counts task id, not yet ended, against p's share.
func (c *Core) submitted(p *peer, id uint64) {
	if c.cfg.MaxPendingPerConn == 0 || c.tasks.get(id).state.Terminal() {
		return
	}
	if c.submitters == nil {
		c.submitters = make(map[uint64]*peer)
	}
	c.submitters[id] = p
	p.pending++
}

// noteEnd gives task id's place back to the connection that submitted it
// when the task moves from state from to an end.
func (c *Core) noteEnd(id uint64, from, to State) {
	if len(c.submitters) == 0 || from.Terminal() || !to.Terminal() {
		return
	}
	if p, ok := c.submitters[id]; ok {
		delete(c.submitters, id)
		p.pending--
	}
}

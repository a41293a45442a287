package core

import (
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/wire"
)

// Waits for run_done (protocol section 8.10): bounded per connection and
// in all, forgotten with their connection.
const (
	maxRunWaitsPerConn = 1024
	maxRunWaits        = 16_384
)

type runWaiter struct {
	peer PeerID
	req  string
}

type runWaits struct {
	byRun  map[uint64][]runWaiter
	total  int
	byPeer map[PeerID]int
}

// runWaitRoom reports whether p may wait for one more run, and answers the
// request when it may not.
func (c *Core) runWaitRoom(p *peer, req string) bool {
	w := &c.runs.waits
	if w.byPeer[p.id] >= maxRunWaitsPerConn {
		c.sendError(p, req, wire.CodeBadRequest, "wait=true: this connection already waits for "+
			strconv.Itoa(maxRunWaitsPerConn)+" runs, its limit; submit without wait, or wait for some to end")
		return false
	}
	if w.total >= maxRunWaits {
		c.sendError(p, req, wire.CodeUnavailable, "wait=true: all connections together wait for "+
			strconv.Itoa(maxRunWaits)+" runs; nothing was submitted; retry later")
		return false
	}
	return true
}

func (c *Core) addRunWait(p *peer, id uint64, req string) {
	w := &c.runs.waits
	if w.byPeer == nil {
		w.byPeer = map[PeerID]int{}
	}
	w.byRun[id] = append(w.byRun[id], runWaiter{peer: p.id, req: strings.Clone(req)})
	w.byPeer[p.id]++
	w.total++
}

// notifyRunDone sends run_done to everyone waiting for run r.
func (c *Core) notifyRunDone(r *run) {
	w := &c.runs.waits
	list := w.byRun[r.id]
	if len(list) == 0 {
		return
	}
	delete(w.byRun, r.id)
	for _, x := range list {
		c.unwaitPeer(x.peer)
		if c.peers[x.peer] != nil {
			c.sendRunDone(x.peer, x.req, r)
		}
	}
}

func (c *Core) unwaitPeer(p PeerID) {
	w := &c.runs.waits
	w.total--
	if w.byPeer[p]--; w.byPeer[p] <= 0 {
		delete(w.byPeer, p)
	}
}

func (c *Core) sendRunDone(to PeerID, req string, r *run) {
	b := c.begin(wire.KindRunDone, req)
	b.Uint("run_id", r.id)
	b.StrK(kState, r.state.String())
	c.send(to, &b)
}

// dropPeerRunWaits forgets the run waits of a connection that closed.
func (c *Core) dropPeerRunWaits(p PeerID) {
	w := &c.runs.waits
	if w.byPeer[p] == 0 {
		return
	}
	for id, list := range w.byRun {
		kept := list[:0]
		for _, x := range list {
			if x.peer == p {
				w.total--
				continue
			}
			kept = append(kept, x)
		}
		if len(kept) == 0 {
			delete(w.byRun, id)
		} else {
			w.byRun[id] = kept
		}
	}
	delete(w.byPeer, p)
}

// dropRunWaits forgets the waits for a run that is forgotten.
func (c *Core) dropRunWaits(id uint64) {
	w := &c.runs.waits
	for _, x := range w.byRun[id] {
		c.unwaitPeer(x.peer)
	}
	delete(w.byRun, id)
}

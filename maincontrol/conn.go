package maincontrol

import (
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"

	"github.com/apollo11/apollo11/maincontrol/core"
)

// conn is the server's side of one connection. Every field is guarded by
// Server.mu.
type conn struct {
	id core.PeerID
	gc gnet.Conn
	// out holds frames released for writing. spare is the other buffer of
	// the pair, swapped in while out is being written.
	out, spare []byte
	closeAfter bool // close once out is written
	closing    bool // read no more input
	queued     bool // in wakeList, a wake is pending
	held       int  // frames waiting for their records to be durable
	gated      int  // of those, task frames (gate.gated)
	dead       bool // gnet closed it
	// waiting places it in Server.unauth while it is not yet through its
	// handshake. evicted means closed to make room for a newcomer,
	// counted in Server.evicting (unauth.go).
	waiting fifoLinks[*conn]
	evicted bool
	flow    connFlow // the flow control's view of it (flow.go)
	// origin is the TLS connection this one's plaintext comes from, nil
	// for a plaintext peer (tlsterm.go).
	origin *tlsOrigin
	hs     hsInput // what the handshake deadline asks of it (unread.go)
}

// hsInput tells the handshake deadline whether the server was late to
// read a connection. heard is the input the server has taken from it:
// whole frames plus gnet's buffer. heardAsked is heard when the core last
// asked, if asked.
type hsInput struct {
	heard, heardAsked int
	asked             bool
	// entering is set while OnTraffic waits for Server.mu, its input
	// perhaps read already. It is set without the lock.
	entering atomic.Bool
}

func (cn *conn) links() *fifoLinks[*conn] { return &cn.waiting }

// wakeList collects the connections with output or work waiting, to be
// woken once Server.mu is released. Guarded by Server.mu.
type wakeList struct{ dirty []*conn }

// mark queues cn for a wake, once.
func (w *wakeList) mark(cn *conn) {
	if !cn.queued {
		cn.queued = true
		w.dirty = append(w.dirty, cn)
	}
}

// take returns the connections with output waiting, other than self,
// and clears the list. They stay queued until their OnTraffic runs.
func (w *wakeList) take(self *conn) []*conn {
	if len(w.dirty) == 0 {
		return nil
	}
	out := make([]*conn, 0, len(w.dirty))
	for _, cn := range w.dirty {
		if cn != self && cn.queued && !cn.dead {
			out = append(out, cn)
		}
	}
	w.dirty = w.dirty[:0]
	return out
}

package maincontrol

import "github.com/apollo11/apollo11/maincontrol/core"

// The handshake timeout is the peer's time to say hello, not the
// server's time to read it. When the event loop that owns a connection
// is busy past the deadline, its hello may wait unread in the socket
// while the ticker's goroutine runs the core's timers. The core asks
// Unread before it closes such a connection (core.Unread).

var _ core.Unread = (*gate)(nil)

// Unread reports whether peer's input waits unread: in its socket, or
// read by its event loop and waiting for Server.mu. It says false once
// the server has read some of the peer's input since it was last asked.
// A peer that drips bytes the server reads gets at most one grace. It
// runs with Server.mu held.
func (g *gate) Unread(peer core.PeerID) bool {
	cn := g.conns[peer]
	if cn == nil || cn.dead || cn.closing {
		return false
	}
	if cn.hs.asked && cn.hs.heard != cn.hs.heardAsked {
		return false
	}
	cn.hs.asked, cn.hs.heardAsked = true, cn.hs.heard
	return cn.hs.entering.Load() || inputWaiting(cn.gc.Fd())
}

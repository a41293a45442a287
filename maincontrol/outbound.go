package maincontrol

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/apollo11/apollo11/maincontrol/core"
)

// Unsent output. A peer that does not read would make the server hold its
// replies, tasks and done frames without bound. So a connection is watched
// while it holds more than MaxOutbound. While all connections together
// hold more than MaxOutboundTotal, the ones holding the most are watched
// too. A watched connection must send its peer at least outboundMinDrain,
// or half of what it held, by the end of OutboundGrace. Otherwise it is
// cut off. One that does is spared, as reading peers are. Examples are a
// burst of big tasks to a 64-slot executor, a client's done replies, or a
// slow but steady reader. One past 4*MaxOutbound is cut at once.
// Meanwhile a connection over its share is not read (readFrames). So it
// asks for no more until it catches up.

// outboundMinDrain is what a watched connection must have sent its peer
// within OutboundGrace to be spared. A reader slower than this, while the
// server holds too much for it, is cut.
const outboundMinDrain = 256 << 10

// noteUnsent records that gnet holds unsent bytes for cn after its
// latest write. wrote is the bytes that write handed to gnet. It starts
// watching cn when it holds more than MaxOutbound. It says why cn must be
// cut off, or "". It runs with Server.mu held, on cn's event loop, since
// gnet's count of a connection is only read there.
func (f *flow) noteUnsent(cn *conn, unsent, wrote int) string {
	f.unsentTotal += unsent - cn.flow.unsent
	cn.flow.unsent = unsent
	cn.flow.written += wrote
	if unsent > 4*f.cfg.MaxOutbound {
		return fmt.Sprintf("peer is not reading: %d bytes unsent", unsent)
	}
	if cn.flow.watchSince.IsZero() {
		if unsent > f.cfg.MaxOutbound {
			f.watch(cn, f.now())
		}
		return ""
	}
	now := f.now()
	if now.Sub(cn.flow.watchSince) < f.cfg.OutboundGrace {
		return ""
	}
	// This is what gnet handed the kernel since the watch began. It
	// is what was written to it, less what it still holds of that.
	sent := (cn.flow.written - cn.flow.watchWritten) - (unsent - cn.flow.watchUnsent)
	held, since := cn.flow.watchUnsent, cn.flow.watchSince
	f.unwatch(cn)
	if sent < min(outboundMinDrain, held/2) && (unsent > f.cfg.MaxOutbound || f.unsentTotal > f.cfg.MaxOutboundTotal) {
		return fmt.Sprintf("peer is not reading: sent %d of %d unsent bytes in %v", max(sent, 0), held, now.Sub(since).Round(time.Millisecond))
	}
	if unsent > f.cfg.MaxOutbound {
		f.watch(cn, now) // reading, but still over: another round
	}
	return ""
}

func (f *flow) watch(cn *conn, now time.Time) {
	cn.flow.watchSince, cn.flow.watchUnsent, cn.flow.watchWritten = now, cn.flow.unsent, cn.flow.written
	f.watched[cn] = struct{}{}
}

func (f *flow) unwatch(cn *conn) {
	cn.flow.watchSince = time.Time{}
	delete(f.watched, cn)
}

// relieveOutbound runs at each tick. While all connections together hold
// more unsent output than MaxOutboundTotal, it watches those holding the
// most, until the rest would fit. It wakes the watched connections whose
// grace is over, so their own event loop judges them (noteUnsent) even if
// their peer sends nothing. It scans the connections only while over the
// total. It runs with Server.mu held.
func (f *flow) relieveOutbound(conns map[core.PeerID]*conn) {
	now := f.now()
	over := f.unsentTotal - f.cfg.MaxOutboundTotal
	for cn := range f.watched {
		over -= cn.flow.unsent // already on its way to being judged
		if now.Sub(cn.flow.watchSince) >= f.cfg.OutboundGrace {
			f.wakes.mark(cn)
		}
	}
	if over <= 0 {
		return
	}
	var heavy []*conn
	for _, cn := range conns {
		if cn.flow.unsent > 0 && cn.flow.watchSince.IsZero() {
			heavy = append(heavy, cn)
		}
	}
	slices.SortFunc(heavy, func(a, b *conn) int { return cmp.Compare(b.flow.unsent, a.flow.unsent) })
	for _, cn := range heavy {
		if over <= 0 {
			break
		}
		f.watch(cn, now)
		over -= cn.flow.unsent
	}
}

// overShare reports whether readFrames should stop reading cn's requests.
// That is when pending, its round's replies plus what gnet holds, passes
// MaxOutbound. While all connections together hold more than
// MaxOutboundTotal, a sixty-fourth of it is enough. It runs with Server.mu
// held.
func (f *flow) overShare(cn *conn, pending int) bool {
	return pending > f.cfg.MaxOutbound ||
		pending > f.cfg.MaxOutbound/64 && f.unsentTotal+len(cn.out) > f.cfg.MaxOutboundTotal
}

// wakeBlocked wakes, at each tick, the connections readFrames stopped
// reading for their unsent output. Each looks again, on its own loop, at
// what it holds now, as gnet says nothing when a peer reads. It runs with
// Server.mu held.
func (f *flow) wakeBlocked() {
	for cn := range f.outBlocked { // OnClose takes the closed ones out
		delete(f.outBlocked, cn)
		f.wakes.mark(cn)
	}
}

// backlogged tells the core (core.Backlog, through the gate) that output
// it may hold back should wait. The done replies of a task with many
// waiters are such output. It waits when the peer holds more than a
// sixteenth of MaxOutbound unsent, or more than MaxInflight frames
// awaiting disk. It waits too when all peers together hold more than
// MaxOutboundTotal. It runs with Server.mu held.
func (f *flow) backlogged(cn *conn) bool {
	return len(cn.out)+cn.flow.unsent > f.cfg.MaxOutbound/16 || cn.held > f.cfg.MaxInflight ||
		f.unsentTotal > f.cfg.MaxOutboundTotal
}

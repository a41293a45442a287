package maincontrol

import (
	"context"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/snapshot"
	"github.com/apollo11/apollo11/wire"
)

// gate is the core's Effects, the durable-before-confirm frame gating. It
// appends records to the log. It holds each frame until the records before
// it are durable, then releases it to its connection. It never calls into
// the core. The server pushes what it needs to know, such as the log's
// health and frame logging, and tells the core what became durable. Its
// methods run with Server.mu held, on whichever goroutine drives the core.
type gate struct {
	store recordLog // nil: memory only
	clock core.Clock
	log   *slog.Logger
	flow  *flow     // for Backlogged
	wakes *wakeList // connections with output released to them

	conns    map[core.PeerID]*conn
	lastConn *conn // see lookup

	held      heldQueue
	gated     heldQueue // task frames, held for less (SendTask)
	heldOrder uint64    // counts frames held, in both queues

	lastLSN, durableLSN uint64
	// unavailable: the log cannot be written (Server.onHealth), so frames
	// that wait only for the disk go out (sendsNow).
	unavailable bool
	debug       bool // frame logging is on (`debug on=true`)
	// unsnapped counts the records appended since the last snapshot
	// began; the first of them came at firstUnsnapped (lifecycle.go).
	unsnapped      int
	firstUnsnapped time.Time
	// empty, once made by drained, is closed when nothing is held.
	empty chan struct{}
}

// recordLog takes the change records: the data dir's log, or in cluster
// mode the Raft proposer. Append returns the record's LSN, 0 once closed.
type recordLog interface {
	Append(payload []byte) uint64
}

var (
	_ recordLog     = (*snapshot.Store)(nil)
	_ core.Effects  = (*gate)(nil)
	_ core.Backlog  = (*gate)(nil)
	_ core.FrameLog = (*gate)(nil)
)

func newGate(clock core.Clock, log *slog.Logger, fl *flow, wakes *wakeList) *gate {
	return &gate{clock: clock, log: log, flow: fl, wakes: wakes, conns: make(map[core.PeerID]*conn)}
}

// Record appends a change record to the log and returns its LSN.
func (g *gate) Record(payload []byte) uint64 {
	if g.store == nil {
		return g.lastLSN
	}
	lsn := g.store.Append(payload)
	if lsn == 0 {
		// The log is closed (a stop under way): the change is in no
		// record, so no frame after it may go out.
		lsn = math.MaxUint64
	}
	g.lastLSN = lsn
	if g.unsnapped == 0 {
		g.firstUnsnapped = g.clock.Now()
	}
	g.unsnapped++
	return lsn
}

// Send queues a frame. It is held until every record appended so far is
// durable, unless its wait lets it out sooner (see core.Wait).
func (g *gate) Send(peer core.PeerID, frame []byte, wait core.Wait) {
	cn := g.lookup(peer)
	if cn == nil || cn.dead || cn.closeAfter {
		return
	}
	if g.debug {
		g.logFrame("out", cn, frame[wire.HeaderLen:])
	}
	if g.lastLSN <= g.durableLSN || g.sendsNow(cn, wait) {
		cn.out = append(cn.out, frame...)
		g.wakes.mark(cn)
		return
	}
	g.hold(&g.held, heldFrame{cn: cn, lsn: g.lastLSN, confirms: wait == core.WaitConfirm}, frame)
}

// SendTask queues a task frame, held until the log is durable up to
// after. It passes the connection's frames held for later records, such
// as its own dispatch record or result_acks. It does not pass a task
// frame held before it.
func (g *gate) SendTask(peer core.PeerID, frame []byte, after uint64) {
	cn := g.lookup(peer)
	if cn == nil || cn.dead || cn.closeAfter {
		return
	}
	if g.debug {
		g.logFrame("out", cn, frame[wire.HeaderLen:])
	}
	if after <= g.durableLSN && cn.gated == 0 {
		cn.out = append(cn.out, frame...)
		g.wakes.mark(cn)
		return
	}
	g.hold(&g.gated, heldFrame{cn: cn, lsn: after, confirms: true, gated: true}, frame)
	cn.gated++
}

// Close closes a connection after the frames queued before.
func (g *gate) Close(peer core.PeerID) {
	cn := g.conns[peer]
	if cn == nil || cn.dead {
		return
	}
	cn.closing = true
	if cn.held == 0 {
		cn.closeAfter = true
		g.wakes.mark(cn)
		return
	}
	// At lastLSN, after every gate of the task frames held before it.
	g.hold(&g.held, heldFrame{cn: cn, lsn: g.lastLSN, close: true}, nil)
}

// Backlogged tells the core whether output it may hold back should wait
// (see flow.backlogged).
func (g *gate) Backlogged(peer core.PeerID) bool {
	cn := g.lookup(peer)
	return cn != nil && g.flow.backlogged(cn)
}

// LogFrames turns frame logging on or off, as `debug` asks.
func (g *gate) LogFrames(on bool) { g.debug = on }

// hold puts a frame or a close in q, after every frame held before it.
func (g *gate) hold(q *heldQueue, h heldFrame, frame []byte) {
	g.heldOrder++
	h.order = g.heldOrder
	q.push(h, frame)
	h.cn.held++
}

// sendsNow reports whether a frame may pass records that are not yet
// durable.
func (g *gate) sendsNow(cn *conn, wait core.Wait) bool {
	switch wait {
	case core.WaitNothing:
		// Behind a held frame it would overtake it; held, it is
		// released with the frames before it.
		return cn.held == 0
	case core.WaitDurable:
		// While the log cannot be written nothing becomes durable:
		// errors (code=unavailable), pongs and reads go out, so that
		// peers are answered instead of hanging until the disk recovers.
		return g.unavailable
	default:
		return false
	}
}

// lookup finds a peer's connection. Replies come in runs to one peer, for
// a batch of submits or results. So the last one found is kept. Peer ids
// are never reused, and a closed connection is marked dead.
func (g *gate) lookup(peer core.PeerID) *conn {
	if g.lastConn != nil && g.lastConn.id == peer {
		return g.lastConn
	}
	cn := g.conns[peer]
	if cn != nil {
		g.lastConn = cn
	}
	return cn
}

// forget drops a closed connection.
func (g *gate) forget(cn *conn) {
	delete(g.conns, cn.id)
	if g.lastConn == cn {
		g.lastConn = nil
	}
}

// pending is the number of frames and closes still held.
func (g *gate) pending() int { return g.held.len() + g.gated.len() }

// drained returns a channel closed once nothing is held, for a stop to
// wait on.
func (g *gate) drained() <-chan struct{} {
	if g.empty == nil {
		g.empty = make(chan struct{})
	}
	g.noteDrained()
	return g.empty
}

// noteDrained closes empty, if a stop waits on it and nothing is held.
func (g *gate) noteDrained() {
	if g.empty == nil || g.pending() > 0 {
		return
	}
	select {
	case <-g.empty:
	default:
		close(g.empty)
	}
}

// release moves frames durable at lsn to their connections, from both
// queues in the order they were sent. It reports whether lsn is news. The
// caller then tells the core (Core.Durable).
func (g *gate) release(lsn uint64) bool {
	if lsn <= g.durableLSN {
		return false
	}
	g.durableLSN = lsn
	for {
		a, b := g.held.ready(lsn), g.gated.ready(lsn)
		switch {
		case a != nil && (b == nil || a.order < b.order):
			g.held.pop(g.deliver)
		case b != nil:
			g.gated.pop(g.deliver)
		default:
			g.held.compact()
			g.gated.compact()
			g.noteDrained()
			return true
		}
	}
}

// releaseUnconfirming releases the held frames that need not wait for
// the disk (see Send), when the log has just failed. The replies and
// errors held before the failure must not wait for its recovery. A
// connection's close stays held behind its confirmations.
func (g *gate) releaseUnconfirming() {
	blocked := map[*conn]bool{}
	g.held.extract(func(h *heldFrame, _ []byte) bool {
		if h.close {
			return blocked[h.cn] || h.cn.gated > 0
		}
		if h.confirms {
			blocked[h.cn] = true
			return true
		}
		return false
	}, g.deliver)
	g.noteDrained()
}

// deliver hands a released frame or close to its connection.
func (g *gate) deliver(h *heldFrame, frame []byte) {
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
	g.wakes.mark(cn)
}

// logFrame logs a frame while `debug on`. It logs at info, or at the
// lowest level the logger takes when that is above info. Whoever turned
// frame logging on asked to see the frames.
func (g *gate) logFrame(dir string, cn *conn, payload []byte) {
	level := slog.LevelInfo
	for ctx := context.Background(); level < slog.LevelError && !g.log.Enabled(ctx, level); {
		level += 4 // info, warn, error
	}
	if len(payload) <= frameLogMax {
		g.log.Log(context.Background(), level, "frame", "dir", dir, "peer", cn.id, "payload", string(payload))
		return
	}
	g.log.Log(context.Background(), level, "frame", "dir", dir, "peer", cn.id,
		"payload", strings.ToValidUTF8(string(payload[:frameLogMax]), ""), "bytes", len(payload), "truncated", true)
}

// frameLogMax is how much of a frame's payload the frame log shows. The
// keys and the start of the values tell what happened. A client sending
// 1 MiB frames with logging on must not write a gigabyte of log a second.
// The event loop waits for the log's writes.
const frameLogMax = 4 << 10

// dropAll forgets every held frame and closes every connection, after a
// leader lost its leadership. The records those frames wait for may
// never commit, so no frame may confirm them. Nothing is held after.
// Frames already released wait for nothing: they go out before the close.
func (g *gate) dropAll() {
	forget := func(h *heldFrame, _ []byte) {
		h.cn.held--
		if h.gated {
			h.cn.gated--
		}
	}
	all := func(*heldFrame, []byte) bool { return false }
	g.held.extract(all, forget)
	g.gated.extract(all, forget)
	g.held.compact()
	g.gated.compact()
	for _, cn := range g.conns {
		if cn.dead {
			continue
		}
		cn.closing, cn.closeAfter = true, true
		g.wakes.mark(cn)
	}
	g.durableLSN = g.lastLSN
	g.noteDrained()
}

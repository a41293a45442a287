package core

import (
	"github.com/apollo11/apollo11/wire"
)

// send finishes a frame that confirms nothing and hands it to Effects.
func (c *Core) send(to PeerID, b *wire.Builder) { c.emit(to, b, WaitDurable) }

// confirm finishes a frame that confirms a change or dispatches a task
// (see Wait) and hands it to Effects.
func (c *Core) confirm(to PeerID, b *wire.Builder) int { return c.emit(to, b, WaitConfirm) }

// sendTask finishes a task frame, which waits for the log up to gate only
// (see Effects.SendTask), and hands it to Effects.
func (c *Core) sendTask(to PeerID, b *wire.Builder, gate uint64) {
	if frame, ok := c.finish(b); ok {
		c.fx.SendTask(to, frame, gate)
	}
}

// greet finishes a handshake frame, which shows no change (see Wait), and
// hands it to Effects.
func (c *Core) greet(to PeerID, b *wire.Builder) { c.emit(to, b, WaitNothing) }

// emit finishes a frame. A builder error here is a core bug, in its own
// keys or an unchecked value. So it is logged and the frame dropped rather
// than sent broken.
// It returns the frame's size (0 when dropped).
func (c *Core) emit(to PeerID, b *wire.Builder, wait Wait) int {
	frame, ok := c.finish(b)
	if !ok {
		return 0
	}
	c.fx.Send(to, frame, wait)
	return len(frame)
}

// finish ends a frame, keeping its buffer for the next.
func (c *Core) finish(b *wire.Builder) ([]byte, bool) {
	frame, err := b.Finish()
	c.frame = frame[:0]
	if err != nil {
		c.log.Error("cannot encode frame", "err", err)
		return nil, false
	}
	return frame, true
}

// begin starts a reply of type typ, with req when the request had one.
func (c *Core) begin(typ wire.Kind, req string) wire.Builder {
	b := wire.Begin(c.frame[:0], typ)
	switch req {
	case "":
	case emptyReq:
		b.StrK(kReq, "")
	default:
		b.StrK(kReq, req)
	}
	return b
}

// sendError answers with `type=error`. Codes that end the connection close
// it after the frame.
func (c *Core) sendError(p *peer, req string, code wire.Code, msg string) {
	b := c.begin(wire.KindError, req)
	b.StrK(kCode, string(code))
	b.StrK(kMessage, msg)
	c.sendErrorFrame(p, code, &b)
}

// sendEscapedError is sendError for a message already escaped for the
// wire, such as a numText.
func (c *Core) sendEscapedError(p *peer, req string, code wire.Code, escaped string) {
	b := c.begin(wire.KindError, req)
	b.StrK(kCode, string(code))
	b.PlainK(kMessage, escaped)
	c.sendErrorFrame(p, code, &b)
}

func (c *Core) sendErrorFrame(p *peer, code wire.Code, b *wire.Builder) {
	c.send(p.id, b)
	if code.CloseAfter() {
		c.closePeer(p)
	}
}

// closePeer closes a connection and forgets it at once, so that nothing else
// is sent to it and its executor counts as disconnected.
func (c *Core) closePeer(p *peer) {
	c.fx.Close(p.id)
	c.Closed(p.id)
}

// sendCancel tells an executor to stop one dispatch, if it is connected.
func (c *Core) sendCancel(e *executor, id uint64, ver uint64) {
	if e == nil || !e.connected() {
		return
	}
	b := wire.Begin(c.frame[:0], wire.KindCancel)
	b.UintK(kTaskID, id)
	b.UintK(kVersion, ver)
	c.send(e.peer, &b)
}

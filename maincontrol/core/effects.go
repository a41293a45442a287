package core

// PeerID names one connection. The server assigns it, and 0 is never a peer.
type PeerID uint64

// Effects is how the core's decisions leave it. The core calls these
// methods synchronously from Open, Handle, Closed and Tick, on its owner's
// goroutine. Implementations must not call back into the Core.
type Effects interface {
	// Record appends a change record to the log and returns its
	// position, which grows with each record. payload is only valid
	// during the call.
	Record(payload []byte) uint64
	// Send queues one whole frame (header included) for peer. Unless wait
	// is WaitNothing, the frame must not reach the peer before every record
	// passed to Record before this call is durable. Frames to one peer
	// keep their order. frame is only valid during the call. Sending to a
	// closed peer is a no-op.
	Send(peer PeerID, frame []byte, wait Wait)
	// SendTask queues a task frame for peer. It must not reach the peer
	// before the record at position after is durable, with every record
	// before it. The core reports those with Core.Durable. It may pass
	// frames to peer that wait for later records, such as its own dispatch
	// record and result_acks (spec section 4). Among themselves, task frames
	// to one peer keep their order.
	SendTask(peer PeerID, frame []byte, after uint64)
	// Close closes peer's connection after the frames queued before it.
	Close(peer PeerID)
}

// FrameLog may be implemented by Effects. The core calls LogFrames when
// `debug` turns frame logging on or off, before it sends debug_ok. So the
// effects need not ask the core while they send.
type FrameLog interface {
	LogFrames(on bool)
}

// Unread may be implemented by Effects. The core asks it when a
// connection's handshake deadline passes. Input that waits unread then
// is the server's lateness, not the peer's silence: its hello may be in
// it. The answer is true only while the server has read none of the
// peer's input since it was last asked. So a peer that drips bytes the
// server does read gets at most one grace (handshakeGrace).
type Unread interface {
	Unread(peer PeerID) bool
}

// Wait says what a frame waits for before it may reach its peer.
type Wait uint8

const (
	// WaitDurable is for a frame that may show a change: a reply, a read,
	// or an error. It waits until the records before it are durable, so a
	// peer never sees a change a crash could still take back. While the
	// log cannot be written it may go out anyway, so peers are answered.
	WaitDurable Wait = iota
	// WaitConfirm is for a frame that confirms a change (submitted,
	// cancelled, done, result_ack, per spec section 7). It waits for the disk
	// even while the log cannot be written. Task frames wait so too, but
	// for less (Effects.SendTask).
	WaitConfirm
	// WaitNothing is for a handshake frame (welcome, hello_ok), which
	// shows no change. It goes out as soon as the frames before it to the
	// same peer have. So a slow disk cannot hold a new connection until
	// its handshake timeout.
	WaitNothing
)

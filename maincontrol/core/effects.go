package core

// PeerID names one connection. The server assigns it; 0 is never a peer.
type PeerID uint64

// Effects is how the core's decisions leave it. The core calls these
// methods synchronously from Open, Handle, Closed and Tick, on its owner's
// goroutine; implementations must not call back into the Core.
type Effects interface {
	// Record appends a change record to the log. payload is only valid
	// during the call.
	Record(payload []byte)
	// Send queues one whole frame (header included) for peer. The frame
	// must not reach the peer before every record passed to Record before
	// this call is durable; frames to one peer keep their order. frame is
	// only valid during the call. Sending to a closed peer is a no-op.
	//
	// confirms marks the frames that confirm a change or dispatch a task
	// (submitted, cancelled, done, result_ack, task: spec section 7). While
	// the log cannot be written they must wait for the disk; the others
	// (welcomes, errors, reads) may go out, so peers are answered.
	Send(peer PeerID, frame []byte, confirms bool)
	// Close closes peer's connection after the frames queued before it.
	Close(peer PeerID)
}

// Package maincontrol is the main control's server. It puts the core state
// machine (package core) on the network with gnet, and on disk with
// package snapshot.
//
// # One owner for the core
//
// The core is not safe for concurrent use. Every goroutine that touches it
// holds one mutex. Those are the event loops in OnTraffic, gnet's ticker
// goroutine in OnTick, and the releaser goroutine when records become
// durable. The log's writer never waits for it (durable.go). By default there is one event loop, chosen by measuring
// (bench/README.md). The core is the serial part, so a second loop only
// adds lock handoffs. The other core is better spent on the log writer,
// snapshots and the clients. --event-loops lets a bigger host try more.
//
// # Confirm after durable
//
// The gate (gate.go) is the core's Effects. The core hands it every change
// record for the log (Store.Append, no disk I/O on the loop), and every
// frame to Send. A frame is held until every record appended before it is
// durable, then released to its connection. The handshake frames (welcome,
// hello_ok) show no change and are not held, unless a held frame to the
// same connection is before them. A slow disk must not keep a new peer
// waiting into its handshake timeout. The log's writer goroutine reports
// durability, and the next holder of the mutex releases the frames: an
// event loop's callback, or the releaser when the loop is idle. The
// release wakes the connection, whose OnTraffic writes
// what was released. So connections are only ever written from their own
// callbacks. A Write that fails closes the connection inside gnet, and
// never runs under the mutex.
//
// While the log cannot be written, on a full or failing disk, nothing
// becomes durable. Then only confirmations and dispatches (submitted,
// cancelled, done, result_ack, task) wait for the disk. Every other frame
// goes out at once, such as errors with code=unavailable, pong and the
// replies to reads. Those already held are released when the log fails.
// So peers are answered instead of hanging until the disk recovers. A read
// may then show a change whose record is not yet durable.
//
// # Limits
//
// The flow control (flow.go) groups the limits on what one peer can make
// the server hold.
//
// A frame header announcing more than --max-frame is answered with
// frame_too_large. The connection is closed before any payload is read. A
// connection whose unsent output passes MaxOutbound is closed unless its
// peer reads some of it within OutboundGrace (outbound.go). So is one of
// those holding the most when all hold more than MaxOutboundTotal. A
// connection with more than --max-inflight replies awaiting disk is not
// read until they are released. --max-conns bounds connections. At start
// it is lowered, with a warning, to what the open-file limit holds besides
// the descriptors the main control needs itself. The server accepts the
// main port itself, not gnet (accept.go). So neither a flood of
// connections nor a moment out of descriptors can stop the state
// authority. The metrics port serves at most 32 connections, closing idle
// ones.
package maincontrol

// Package maincontrol is the main control's server: the core state machine
// (package core) put on the network with gnet, and on disk with package
// snapshot.
//
// # One owner for the core
//
// The core is not safe for concurrent use. Every goroutine that touches it
// — the event loop(s) in OnTraffic, gnet's ticker goroutine in OnTick, the
// log's writer goroutine when records become durable — holds one mutex.
// By default there is one event loop, chosen by measuring: on the 2-core
// host of bench/README.md, alternating runs of 500,000 echo tasks gave
// 81,511 and 79,067 tasks/s with one loop against 80,977 and 73,563 with
// two. The core is the serial part; a second loop only adds lock
// handoffs, and the other core is better spent on the log writer,
// snapshots and the clients.
// --event-loops lets a bigger host try more.
//
// # Confirm after durable
//
// The gate (gate.go) is the core's Effects. The core hands it every
// change record for the log (Store.Append, no disk I/O on the loop) and
// every frame to Send. A frame is held until every record
// appended before it is durable, then released to its connection. The
// handshake frames (welcome, hello_ok) show no change and are not held,
// unless a held frame to the same connection is before them: a slow disk
// must not keep a new peer waiting into its handshake timeout. The log's
// writer goroutine reports durability; the release wakes the connection,
// whose OnTraffic writes what was released. So connections are only ever
// written from their own callbacks, and a Write that fails (closing the
// connection inside gnet) never runs under the mutex.
//
// While the log cannot be written (a full or failing disk), nothing becomes
// durable: then only confirmations and dispatches (submitted, cancelled,
// done, result_ack, task) wait for the disk; every other frame — errors
// such as code=unavailable, pong, the replies to reads — goes out at
// once, and those already held are released when the log fails. Peers are
// answered instead of hanging until the disk recovers; a read may then show
// a change whose record is not yet durable.
//
// # Limits
//
// The flow control (flow.go) groups the limits on what one peer can make
// the server hold.
//
// A frame header announcing more than --max-frame is answered with
// frame_too_large and the connection closed before any payload is read. A
// connection whose unsent output passes MaxOutbound, or one of those
// holding the most when all hold more than MaxOutboundTotal, is closed
// unless its peer reads some of it within OutboundGrace (outbound.go). A connection with more than --max-inflight replies
// awaiting disk is not read until they are released. --max-conns bounds
// connections, lowered at start (with a warning) to what the open-file
// limit holds besides the descriptors the main control needs itself. The
// main port is accepted by the server, not by gnet (accept.go), so that
// neither a flood of connections nor a moment out of descriptors can stop
// the state authority.
// The metrics port serves at most 32 connections, closing idle ones.
package maincontrol

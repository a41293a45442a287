// Package core is the main control's state machine: every task, executor
// and shared-state rule of wire-v1 sections 3 to 7, with no sockets, disks
// or goroutines.
//
// The server feeds it inputs — a peer connected (Open), a decoded message
// (Handle), a peer gone (Closed), the clock moving on (Tick) — and the core
// answers through Effects: frames for peers, change records for the log,
// closes. Time comes from an injected Clock, randomness from an injected
// source, so every rule can be tested with a fake clock and no network.
//
// Every change that must survive a crash is a record. Live decisions build a
// record, hand it to Effects.Record, then apply it; recovery applies the
// same records (from a snapshot and the log) to an empty core and reaches
// the identical state. Frames handed to Effects.Send may reach the peer only
// once every record recorded before them is durable: that one rule gives
// "confirm after durable" for submitted, cancelled, result_ack and done, and
// "dispatch is durable before its task frame". The handshake frames, which
// show no change, are the exception (see Wait).
//
// Tasks live in a chunked table that is copy-on-write between snapshots:
// Freeze is O(chunks), and a snapshot is serialized from the frozen chunks
// on another goroutine while the core goes on.
//
// A Core is not safe for concurrent use; the server gives it one owner.
package core

// Package executor is the apollo11 executor library. An executor is a
// stateless worker. It connects to the main control over wire-v1
// (sections 3 and 4) and registers the task types it can run. It runs each
// `task` it is sent with the registered Handler.
//
// An Executor owns one connection at a time. On it, the executor does
// what follows.
//
//   - It reads `welcome`, answers `register` and waits for `registered`.
//     It signs register with the shared token when the main control asks
//     for hmac-sha256. Wire v1's auth is one-way. So an executor holding a
//     token that the main control does not ask for (auth=none) warns at
//     each registration. The main control may not be the one configured.
//   - It sends `heartbeat seq=<n> running=<task_id.version,...>` every
//     heartbeat_ms. It reconnects when nothing at all arrived from the
//     main control for timeout_ms.
//   - It answers each `task` with `started` at once and runs the handler
//     in its own goroutine. `cancel`, the task's timeout_ms and Stop cancel
//     the handler's context. When the handler returns, the executor sends
//     `result` and keeps it until the matching `result_ack`. A handler's
//     error after its time ran out is reported as a retryable timeout. A
//     handler that still returns success is reported as succeeded. Its
//     work is done, and the main control accepts it unless its own task
//     timeout took the task back first.
//   - It fails for good (retryable=false, "bad task frame") a `task` that
//     lacks a key spec section 4 gives every task frame, or holds a bad
//     value. So it is not dispatched again and again. A frame whose
//     task_id and version cannot be read is logged and ignored.
//   - After a reconnect, before the first heartbeat, it sends `started`
//     again for handlers still running. It sends every unacknowledged
//     result again, each after its `started` in the same write.
//   - It never sends a frame larger than the max_frame of the main
//     control's `welcome` (spec section 1), which would cost the
//     connection. It registers at most as many slots as a heartbeat can
//     list when every task_id and version has 20 digits. That is about
//     max_frame/42, logged when fewer than Config.Slots. It never runs
//     more handlers than it registered. A result too large becomes a
//     permanent failure, a progress note is cut, and a state_get too large
//     is not sent.
//   - It reconnects with exponential backoff and jitter after any failure.
//     It keeps retrying after `auth_failed`, logged at error level. Once
//     registered, the delay stays under half the main control's timeout_ms
//     (see Config.BackoffMax). It starts again from its minimum only after
//     a connection that held, not after every registration.
//   - With a cluster's members in Config.Addrs, each failure moves on to
//     the next address. A follower refuses register with not_leader,
//     which may name the leader. The executor goes there at once only
//     when it is one of its own addresses, and logs and ignores any other
//     name (protocol section 8.13).
//
// Run(ctx) returns after a graceful stop when ctx is cancelled. No new
// task is taken. Running handlers get up to Config.DrainTimeout to finish
// and have their results acknowledged, and the rest are cancelled. Then
// `bye reason=shutdown` is sent and its `bye_ack` awaited briefly. Stop is
// the hard stop. It cancels every handler at once, without a drain.
//
// Wire v1 has no way to say "draining". So the main control may still send
// tasks during a drain. They are logged and not started, and the main
// control takes them back after its start timeout.
//
// The executor holds no state across tasks and writes nothing to disk. It
// keeps only the running handlers and the results awaiting their
// acknowledgement, in memory. Two ways of making that grow without end are
// bounded by max(16 MiB, 4 x max_frame). That is the bound the main control
// puts on its own peers (docs/protocol.md, "Bounded buffers").
//
//   - A main control that does not read. When the output not yet written
//     passes the bound, the executor closes the connection and logs "the
//     main control does not read". It sends its results again on the next
//     one. The results and `started` frames a connection starts with do
//     not count against the bound.
//   - A main control that does not send `result_ack`. While the results
//     awaiting theirs pass the bound, a new `task` is not started, and is
//     logged, as one that finds no free slot. Each result counts its
//     frame's size plus 256 bytes. Handlers already running still finish
//     and report.
package executor

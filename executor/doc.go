// Package executor is the apollo11 executor library: a stateless worker
// that connects to the main control over wire-v1 (sections 3 and 4),
// registers the task types it can run, and runs each `task` it is sent with
// the registered Handler.
//
// An Executor owns one connection at a time. It
//
//   - reads `welcome`, answers `register` (signed with the shared token when
//     the main control asks for hmac-sha256) and waits for `registered`;
//     wire v1's auth is one-way, so when it holds a token that the main
//     control does not ask for (auth=none) it warns at each registration:
//     the main control may not be the one configured;
//   - sends `heartbeat seq=<n> running=<task_id.version,...>` every
//     heartbeat_ms, and reconnects when nothing at all arrived from the main
//     control for timeout_ms;
//   - answers each `task` with `started` at once and runs the handler in its
//     own goroutine, under a context cancelled by `cancel`, by the task's
//     timeout_ms and by Stop; when the handler returns it sends `result`
//     and keeps it until the matching `result_ack`. A handler's error
//     after its time ran out is reported as a (retryable) timeout; a
//     handler that still returns success is reported as succeeded: its
//     work is done, and the main control accepts it unless its own task
//     timeout took the task back first;
//   - fails for good (retryable=false, "bad task frame") a `task` that
//     lacks a key spec section 4 gives every task frame or holds a bad
//     value, so that it is not dispatched again and again; a frame whose
//     task_id and version cannot be read is logged and ignored;
//   - after a reconnect, sends `started` again for handlers still running and
//     re-sends every unacknowledged result, each preceded by its `started`
//     in the same write, before the first heartbeat;
//   - never sends a frame larger than the max_frame of the main control's
//     `welcome` (spec section 1), which would cost the connection: it
//     registers at most as many slots as a heartbeat can list when every
//     task_id and version has 20 digits (about max_frame/42, logged when
//     that is fewer than Config.Slots), and never runs more handlers than
//     it registered; a result too large becomes a permanent failure, a
//     progress note is cut, and a state_get too large is not sent;
//   - reconnects with exponential backoff and jitter after any failure, and
//     keeps retrying after `auth_failed` (logged at error level); once
//     registered, the delay stays under half the main control's timeout_ms
//     (see Config.BackoffMax); it starts again from its minimum only after
//     a connection that held, not after every registration.
//
// Run(ctx) returns after a graceful stop when ctx is cancelled: no new task
// is taken, running handlers get up to Config.DrainTimeout to finish and
// have their results acknowledged, the rest are cancelled, then `bye
// reason=shutdown` is sent and its `bye_ack` awaited briefly. Stop is the
// hard stop: it cancels every handler at once, without a drain.
//
// Wire v1 has no way to say "draining", so the main control may still send
// tasks during a drain; they are not started (and logged), and the main
// control takes them back after its start timeout.
//
// The executor holds no state across tasks and writes nothing to disk: all
// it keeps is the set of running handlers and of results awaiting their
// acknowledgement, in memory. Both ways of making that grow without end
// are bounded by max(16 MiB, 4 x max_frame), the bound the main control
// puts on its own peers (docs/protocol.md, "Bounded buffers"):
//
//   - a main control that does not read: when the output not yet written
//     passes the bound, the executor closes the connection (and logs "the
//     main control does not read") and re-sends its results on the next
//     one; the results and `started` frames a connection starts with do
//     not count against it;
//   - a main control that does not send `result_ack`: while the results
//     awaiting theirs pass the bound (each counted at its frame's size plus
//     256 bytes), a new `task` is not started and is logged, as one that
//     finds no free slot; handlers already running still finish and
//     report.
package executor

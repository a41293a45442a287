// Package client is the Go client of the apollo11 main control for
// submitters and admin tools (wire-v1 sections 3 and 5).
//
// Dial opens one connection and completes the handshake (`welcome`,
// `hello`, `hello_ok`). hello is signed with the shared token when the
// main control asks for it. A Client is safe for concurrent use. Every
// request gets a unique `req`. Requests from many goroutines are
// pipelined on the one connection, their frames batched into shared
// writes. A single reader goroutine hands each reply to its caller by
// `req`, whatever the order the replies come in.
//
// Cancelling a call's context stops waiting for its reply, which is then
// dropped when it arrives. The request may already have been sent, and
// acted on. A cancelled Submit may still create its task, so use
// SubmitRequest.Key to make submits idempotent. Such an error matches
// ErrNoReply. A call whose context has already ended sends nothing.
//
// An `error` reply is returned as *Error. Use IsCode or IsQueueFull to
// test it. `queue_full` is backpressure, so retry later, with backoff.
//
// When the connection is lost, the client makes it again by itself, with
// an exponential backoff and jitter (see Reconnect, in Options). Off turns
// it off. Meanwhile, calls fare as follows.
//   - Requests that are safe to send twice are sent again on the new
//     connection, and their callers see only the delay. Those are Query,
//     List, Stats, StateGet, Debug, RunQuery, RunList, a Submit or
//     RunSubmit with a Key, whose key returns the same task or run, and
//     Pause and Resume, which leave the same state (changed may then
//     read false).
//   - A Submit or RunSubmit without a Key, a Cancel, RunCancel,
//     RunResume, ClusterAdd, ClusterRemove and ClusterTransfer fail with
//     an error matching ErrOutcomeUnknown, as well as ErrConnectionLost
//     and ErrNoReply. The main control may have acted on them. A second
//     ClusterAdd could undo another admin's change made in between:
//     ClusterStatus shows the outcome.
//   - A Watch's Wait (SubmitWait, SubmitWatch) goes on by the task's id.
//     It queries the task and returns its end if it has one. Else a keyed
//     task is waited for by its submit, sent again, and another is
//     queried until it ends (see Client.Wait).
//   - Calls made while reconnecting wait for the connection, up to their
//     context's end. Then their error matches ErrConnectionLost as well
//     as the context's error, and nothing was sent.
//
// A cluster's members go in Options.Addrs. Only the leader serves
// requests (protocol section 8.13). A follower's hello_ok, and its
// not_leader refusals, may name the leader. The client goes there at once
// when that address is in its own list. It ignores, and logs, a name
// outside the list, so that no server can steer it elsewhere. Dial fails
// at once with a *LeaderOutsideError when only such followers answer.
// With no usable name, or a lost connection, it tries the next address with the
// backoff. A request refused with not_leader changed nothing, so it is
// sent once more to the leader, whatever its kind. A member answers each
// request by the role it has when the request arrives, so it may serve
// some sent after, or before, the one it refused. The client reads on
// until every request sent there has its answer, which reaches its
// caller, and only then leaves (at most 5 s for a member that does not
// answer: the requests still unanswered then fare as after a lost
// connection). Calls made meanwhile wait for the leader. A refused
// request that never reaches a leader, as the client gives up or is
// closed, fails with an error that says it was not applied. It matches
// the not_leader *Error (IsCode), and ErrConnectionLost or ErrClosed, but
// neither ErrOutcomeUnknown nor ErrNoReply.
//
// With reconnecting off, or once Reconnect.GiveUpAfter has passed, every
// pending and later call fails with an error matching ErrConnectionLost.
// Dial again to go on. After Close, calls fail with ErrClosed.
package client

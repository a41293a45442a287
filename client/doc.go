// Package client is the Go client of the apollo11 main control for
// submitters and admin tools (wire-v1 sections 3 and 5).
//
// Dial opens one connection and completes the handshake (`welcome`,
// `hello`, `hello_ok`, signed with the shared token when the main control
// asks for it). A Client is safe for concurrent use: every request gets a
// unique `req`, requests from many goroutines are pipelined on the one
// connection (their frames batched into shared writes), and a single
// reader goroutine hands each reply to its caller by `req`, whatever the
// order the replies come in.
//
// Cancelling a call's context stops waiting for its reply, which is then
// dropped when it arrives; the request may already have been sent, and
// acted on (a cancelled Submit may still create its task: use
// SubmitRequest.Key to make submits idempotent). Such an error matches
// ErrNoReply. A call whose context has already ended sends nothing.
//
// An `error` reply is returned as *Error; use IsCode or IsQueueFull to
// test it. `queue_full` is backpressure: retry later, with backoff.
//
// The package does not reconnect. When the connection fails every pending
// call fails with an error matching ErrConnectionLost, and so does every
// later call; Dial again to go on. After Close calls fail with ErrClosed.
package client

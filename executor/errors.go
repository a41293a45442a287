package executor

import (
	"errors"

	"github.com/apollo11/apollo11/wire"
)

// Causes a handler's context is cancelled with; read them with
// context.Cause(ctx).
var (
	// ErrCancelled: the main control sent `cancel` for this dispatch. No
	// result is sent for it, whatever the handler returns.
	ErrCancelled = errors.New("task cancelled by the main control")
	// ErrTaskTimeout: the task's timeout_ms ran out (ctx.Err() is
	// context.DeadlineExceeded). The handler's error is reported as a
	// retryable failure.
	ErrTaskTimeout = errors.New("task timeout expired")
	// ErrShutdown: the graceful stop's drain timeout ran out.
	ErrShutdown = errors.New("executor shutting down")
	// ErrStopped: Stop was called (hard stop).
	ErrStopped = errors.New("executor stopped")
)

// Errors of Task.Progress and Task.State.
var (
	// ErrNotConnected: the executor has no registered connection now.
	ErrNotConnected = errors.New("executor is not connected to the main control")
	// ErrDisconnected: the connection dropped while waiting for a reply.
	ErrDisconnected = errors.New("connection to the main control lost")
	// ErrRequestTooLarge: the request would be larger than the main
	// control's max_frame, which it answers by closing the connection.
	ErrRequestTooLarge = errors.New("request larger than the main control's max_frame")
)

// ErrAlreadyRunning is returned by a second call to Run.
var ErrAlreadyRunning = errors.New("executor is already running")

// ServerError is an `error` frame from the main control: a refused
// registration, or an error reply to state_get.
type ServerError = wire.ErrorReply

// permanentError marks a failure that must not be retried.
type permanentError struct{ err error }

func (p *permanentError) Error() string { return p.err.Error() }
func (p *permanentError) Unwrap() error { return p.err }

// Permanent marks err as a failure that must not be retried: its result is
// sent with retryable=false. Any other handler error is retryable. A nil err
// stays nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err, or an error it wraps, was marked with
// Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

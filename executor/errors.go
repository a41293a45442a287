package executor

import (
	"errors"

	"github.com/apollo11/apollo11/wire"
)

// Causes a handler's context is cancelled with. Read them with
// context.Cause(ctx).
var (
	// ErrCancelled means the main control sent `cancel` for this dispatch.
	// No result is sent for it, whatever the handler returns.
	ErrCancelled = errors.New("task cancelled by the main control")
	// ErrTaskTimeout means the task's timeout_ms ran out, and ctx.Err() is
	// context.DeadlineExceeded. The handler's error is reported as a
	// retryable failure.
	ErrTaskTimeout = errors.New("task timeout expired")
	// ErrShutdown means the graceful stop's drain timeout ran out.
	ErrShutdown = errors.New("executor shutting down")
	// ErrStopped means Stop was called, the hard stop.
	ErrStopped = errors.New("executor stopped")
)

// Errors of Task.Progress and Task.State.
var (
	// ErrNotConnected means the executor has no registered connection now.
	ErrNotConnected = errors.New("executor is not connected to the main control")
	// ErrDisconnected means the connection dropped while waiting for a reply.
	ErrDisconnected = errors.New("connection to the main control lost")
	// ErrRequestTooLarge means the request would be larger than the main
	// control's max_frame. The main control would close the connection.
	ErrRequestTooLarge = errors.New("request larger than the main control's max_frame")
)

// ErrAlreadyRunning is returned by a second call to Run.
var ErrAlreadyRunning = errors.New("executor is already running")

// ServerError is an `error` frame from the main control. It refuses a
// registration, or answers state_get.
type ServerError = wire.ErrorReply

// permanentError marks a failure that must not be retried.
type permanentError struct{ err error }

func (p *permanentError) Error() string { return p.err.Error() }
func (p *permanentError) Unwrap() error { return p.err }

// Permanent marks err as a failure that must not be retried. Its result is
// sent with retryable=false. Any other handler error is retryable. A nil
// err stays nil.
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

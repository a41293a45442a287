package client

import (
	"errors"

	"github.com/apollo11/apollo11/wire"
)

// ErrClosed is returned by calls made after, or pending at, Close.
var ErrClosed = errors.New("client is closed")

// ErrConnectionLost is matched (errors.Is) by the error of every call
// pending when the connection failed, and of every later call.
var ErrConnectionLost = errors.New("connection to the main control lost")

// ErrNotReading is returned by a call made while the main control has
// left too many earlier requests unread (it is stopped, or the network
// stalls): the request was not sent. The connection stays usable.
var ErrNotReading = errors.New("main control is not reading")

// Error is an `error` reply from the main control.
type Error = wire.ErrorReply

// IsCode reports whether err is, or wraps, an *Error with the given code.
func IsCode(err error, code wire.Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// IsQueueFull reports whether err is the main control's backpressure
// (`queue_full`): the submit was refused and may be retried later.
func IsQueueFull(err error) bool { return IsCode(err, wire.CodeQueueFull) }

package client

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// ErrClosed is returned by calls made after, or pending at, Close.
var ErrClosed = errors.New("client is closed")

// ErrConnectionLost is matched (errors.Is) by the error of a call lost
// with its connection. That is a call that cannot be sent again (see
// ErrOutcomeUnknown), or any call once reconnecting is off or has given
// up. It is also a call whose context ended while it waited for a
// reconnect.
var ErrConnectionLost = errors.New("connection to the main control lost")

// ErrOutcomeUnknown is matched (errors.Is), beside ErrConnectionLost and
// ErrNoReply, by the error of a request that cannot safely be sent twice.
// Such are a Submit without a Key and a Cancel. Its connection was lost
// before its reply came, so the main control may or may not have acted on
// it. A Submit with a Key is sent again on the next connection instead,
// where the key returns the same task.
var ErrOutcomeUnknown = errors.New("outcome unknown: the connection was lost before the reply")

// ErrNoLeader is matched (errors.Is) by Dial's error when the members it
// reached were all followers that named no leader in Options.Addrs.
var ErrNoLeader = errors.New("no leader among the main control addresses")

// noLeaderError is Dial's error when the members that answered were
// followers or candidates: no member leads. errs says what each address
// answered or why it could not be reached. waited is how long Dial looked
// for a leader, 0 after one pass.
type noLeaderError struct {
	errs   []error
	waited time.Duration
}

func (e *noLeaderError) Error() string {
	var b strings.Builder
	b.WriteString("no member leads (a majority of the voters must be up to elect a leader")
	if e.waited > 0 {
		// To 10 ms: a search cut off by a 300 ms context began a little
		// after the context, and "299ms" reads as another bound.
		w := e.waited.Round(10 * time.Millisecond)
		if w == 0 {
			w = e.waited.Round(time.Millisecond)
		}
		fmt.Fprintf(&b, "; none was elected in %v", w)
	}
	b.WriteString("): ")
	for i, err := range e.errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

func (e *noLeaderError) Unwrap() []error { return append([]error{ErrNoLeader}, e.errs...) }

// LeaderOutsideError is Dial's error when no address answers as leader
// and a follower names a leader outside Options.Addrs. Dial does not
// follow it, on purpose, and does not wait: add Leader to the addresses.
// It matches ErrNoLeader.
type LeaderOutsideError struct {
	Follower string   // the member that named the leader
	Leader   string   // the leader it named
	Addrs    []string // the addresses the client was given
}

func (e *LeaderOutsideError) Error() string {
	return fmt.Sprintf("the leader %s (named by the follower %s) is not among the main control addresses %s: add it",
		e.Leader, e.Follower, strings.Join(e.Addrs, ","))
}

func (e *LeaderOutsideError) Unwrap() error { return ErrNoLeader }

// ErrNotReading is returned by a call made while the main control has
// left too many earlier requests unread. It may be stopped, or the
// network stalls. The request was not sent. The connection stays usable.
var ErrNotReading = errors.New("main control is not reading")

// ErrNoReply is matched (errors.Is), beside the cause, by the error of a
// call whose request was handed to the connection but whose reply never
// came. Its ctx ended, or the connection was lost or closed. The main
// control may have acted on the request. A Submit that failed this way
// may have created its task. Submit again with the same Key to find out.
// A call whose ctx had ended before it started sends nothing, and its
// error does not match ErrNoReply.
var ErrNoReply = errors.New("no reply: the request may have been acted on")

// noReply wraps the cause of a missing reply so that it also matches
// ErrNoReply, with the cause's message.
type noReply struct{ cause error }

func (e *noReply) Error() string   { return e.cause.Error() }
func (e *noReply) Unwrap() []error { return []error{e.cause, ErrNoReply} }

// Error is an `error` reply from the main control.
type Error = wire.ErrorReply

// IsCode reports whether err is, or wraps, an *Error with the given code.
func IsCode(err error, code wire.Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// IsQueueFull reports whether err is the main control's backpressure
// (`queue_full`). The submit was refused and may be retried later.
func IsQueueFull(err error) bool { return IsCode(err, wire.CodeQueueFull) }

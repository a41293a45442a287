package executor

import "context"

// Result is what a handler hands back. Out becomes the result's out.* keys.
// Set and Add become state.set.* and state.add.*. They are sent only when
// the handler succeeds, and the main control applies them atomically with
// the result. Keys follow the wire key rules, a-z 0-9 _ . - with the
// prefix counted in the 64-byte limit. So shared-state names are at most
// 54 bytes, and out names at most 60. Values must be valid UTF-8. A result
// that breaks them, or whose frame would exceed the main control's
// max_frame, is replaced with a permanent failure.
type Result struct {
	Out map[string]string
	Set map[string]string
	Add map[string]int64
}

// Handler runs one task type.
//
// Handle is called on its own goroutine, once per dispatch. Calls may run
// at once, up to Config.Slots. It must return when ctx is done.
// context.Cause(ctx) says why (ErrCancelled, ErrTaskTimeout, ErrShutdown,
// ErrStopped). A nil error means succeeded. An error means failed, and
// retryable unless marked with Permanent. A failure keeps Result.Out,
// which the main control shows, but drops Set and Add. A panic is
// recovered and reported as a permanent failure "panic: <value>". A
// handler may end its goroutine with runtime.Goexit, from t.FailNow say.
// That is a permanent failure "handler exited without returning". The
// *Task is valid only until Handle returns.
type Handler interface {
	Handle(ctx context.Context, t *Task) (Result, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, t *Task) (Result, error)

// Handle calls f(ctx, t).
func (f HandlerFunc) Handle(ctx context.Context, t *Task) (Result, error) { return f(ctx, t) }

var _ Handler = HandlerFunc(nil)

package executor

import "context"

// Result is what a handler hands back. Out becomes the result's out.* keys;
// Set and Add become state.set.* and state.add.* and are sent only when the
// handler succeeds (the main control applies them atomically with the
// result). Keys follow the wire key rules: a-z 0-9 _ . - with the prefix
// counted in the 64-byte limit (so shared-state names are at most 54
// bytes, out names at most 60); values must be valid UTF-8. A result that
// breaks them, or whose frame would exceed the main control's max_frame, is
// replaced with a permanent failure.
type Result struct {
	Out map[string]string
	Set map[string]string
	Add map[string]int64
}

// Handler runs one task type.
//
// Contract: Handle is called on its own goroutine, once per dispatch, and
// possibly concurrently with other calls (up to Config.Slots at once). It
// must return when ctx is done; context.Cause(ctx) says why (ErrCancelled,
// ErrTaskTimeout, ErrShutdown, ErrStopped). Returning a nil error means
// succeeded; an error means failed, retryable unless marked with
// Permanent. A failure keeps Result.Out (the main control shows it) but
// drops Set and Add. A panic is recovered and reported as a permanent
// failure "panic: <value>"; a handler that ends its goroutine with
// runtime.Goexit (t.FailNow, say) is a permanent failure "handler exited
// without returning". The *Task is valid only until Handle returns.
type Handler interface {
	Handle(ctx context.Context, t *Task) (Result, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, t *Task) (Result, error)

// Handle calls f(ctx, t).
func (f HandlerFunc) Handle(ctx context.Context, t *Task) (Result, error) { return f(ctx, t) }

var _ Handler = HandlerFunc(nil)

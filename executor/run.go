package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// run is one executing dispatch.
type run struct {
	task      *Task
	handler   Handler // nil for a task type with no handler
	ctx       context.Context
	cancel    context.CancelCauseFunc
	stopTimer context.CancelFunc // releases the timeout; nil without one
	cancelled bool               // by the main control; guarded by Executor.mu
	// check says the args are checked (schema, Validate) before `started`.
	// The worker then sends started, which Executor.mu guards.
	check   bool
	started bool
	schema  []Arg
	timeout time.Duration // the task's, else its handler's default; 0: none
}

// newRun makes the handler's context. r.cancel cancels it, on `cancel`, a
// drain timeout or Stop (see cancelRuns). The task's timeout ends it too,
// else its handler's default one. It does not derive from a shared
// parent. So starting and ending tasks never contend on one parent
// context's lock. The caller holds e.mu.
func newRun(t *Task) *run {
	ctx, cancel := context.WithCancelCause(context.Background())
	r := &run{task: t, handler: t.exec.cfg.Handlers[t.Type], ctx: ctx, cancel: cancel, timeout: t.Timeout}
	d := t.exec.descs[t.Type]
	if r.timeout == 0 && d.TimeoutMs > 0 && d.TimeoutMs <= uint64(maxTimeoutMs) {
		r.timeout = time.Duration(d.TimeoutMs) * time.Millisecond
	}
	if r.handler != nil && t.bad == nil && t.RollbackOf == 0 {
		// A compensation's args are the run's, not the step's, so unchecked.
		_, validates := r.handler.(Validator)
		if wire.RuntimeChecks(d.Args) {
			r.schema = d.Args
		}
		r.check = validates || r.schema != nil
	}
	r.started = !r.check
	if r.timeout > 0 {
		r.ctx, r.stopTimer = context.WithTimeoutCause(ctx, r.timeout, ErrTaskTimeout)
	}
	return r
}

// workerIdle is how long a worker goroutine waits for its next task
// before it exits.
const workerIdle = 10 * time.Second

// spawn runs r on an idle worker goroutine, or on a new one. Workers are
// reused, so a busy executor does not pay for a goroutine and its stack
// growth per task.
func (e *Executor) spawn(r *run) {
	select {
	case e.work <- r:
	default:
		go e.worker(r)
	}
}

// worker executes r, then waits up to workerIdle for more work. It exits
// early after Stop.
func (e *Executor) worker(r *run) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		e.execute(r)
		idle.Reset(workerIdle)
		select {
		case r = <-e.work:
		case <-idle.C:
			return
		case <-e.hardCtx.Done():
			return
		}
	}
}

// execute runs the handler and reports its result.
func (e *Executor) execute(r *run) {
	t := r.task
	ctx := context.Background()
	// Per-task lines are debug. At thousands of tasks a second, two info
	// lines per task would cost more than running an echo.
	if e.log.Enabled(ctx, slog.LevelDebug) {
		e.log.LogAttrs(ctx, slog.LevelDebug, "task started", taskAttrs(t)...)
	}
	start := time.Now()
	returned := false
	defer func() {
		// runtime.Goexit, from t.FailNow in a test handler say, unwinds past
		// call without a panic to recover. Finish here, or the slot stays
		// taken and the dispatch is listed as running forever.
		if !returned {
			e.log.LogAttrs(ctx, slog.LevelError, "handler exited without returning", taskAttrs(t)...)
			e.finish(r, Result{}, Permanent(errGoexit), time.Since(start))
		}
	}()
	var res Result
	var err error
	if r.check {
		err = e.checkArgs(r)
		e.sendStarted(r)
		if err == nil && r.ctx.Err() != nil {
			// It was taken back or stopped while Validate ran. Handle would
			// only see a done context.
			err = context.Cause(r.ctx)
		}
	}
	if err == nil {
		res, err = e.call(r)
	}
	returned = true
	e.finish(r, res, err, time.Since(start))
}

// errGoexit is the failure of a handler that called runtime.Goexit.
var errGoexit = errors.New("handler exited without returning")

// call runs the handler, turning a panic into a permanent failure.
func (e *Executor) call(r *run) (res Result, err error) {
	if r.task.bad != nil {
		return Result{}, Permanent(fmt.Errorf("bad task frame: %w", r.task.bad))
	}
	if r.handler == nil {
		return Result{}, Permanent(fmt.Errorf("no handler for task type %q on this executor", r.task.Type))
	}
	defer func() {
		if v := recover(); v != nil {
			e.log.LogAttrs(context.Background(), slog.LevelError, "handler panicked",
				append(taskAttrs(r.task), slog.Any("panic", v), slog.String("stack", string(debug.Stack())))...)
			res, err = Result{}, Permanent(fmt.Errorf("panic: %v", v))
		}
	}()
	if r.task.RollbackOf != 0 {
		if rb, ok := r.handler.(RollbackHandler); ok {
			return rb.Rollback(r.ctx, r.task)
		}
	}
	return r.handler.Handle(r.ctx, r.task)
}

// finish records the handler's outcome and sends the result on the current
// connection, if any. It stays pending until its result_ack. No result is
// sent for a dispatch the main control cancelled, nor for a failure
// caused by the executor's own stop.
func (e *Executor) finish(r *run, res Result, err error, dur time.Duration) {
	t := r.task
	tok := t.token()
	cause := context.Cause(r.ctx)
	r.cancel(nil)
	if r.stopTimer != nil {
		r.stopTimer()
	}
	if err != nil && errors.Is(cause, ErrTaskTimeout) && !errors.Is(err, ErrTaskTimeout) {
		// The handler failed because its time ran out. Say that, not the
		// context's "deadline exceeded". Timeouts are retryable.
		err = fmt.Errorf("timeout after %v: %w", r.timeout, ErrTaskTimeout)
	}
	o := newOutcome(tok, res, err)
	drop := ""
	switch {
	case errors.Is(cause, ErrCancelled):
		drop = "cancelled by the main control"
	case err != nil && (errors.Is(cause, ErrShutdown) || errors.Is(cause, ErrStopped)):
		drop = "cancelled by executor stop"
	}
	var frame []byte
	replaced := ""
	if drop == "" {
		frame, replaced = o.encode(int(e.maxFrame.Load()))
	}

	e.mu.Lock()
	delete(e.runs, tok)
	s := e.cur
	if drop == "" {
		e.seq++
		o.seq = e.seq
		e.unacked[tok] = o
		if s != nil {
			if o.frameMax != s.maxFrame {
				var again string
				frame, again = o.encode(s.maxFrame)
				replaced = cmp.Or(replaced, again)
			}
			s.out.queue(frame)
		}
		o.size = len(frame) + resultOverhead
		e.unackedBytes += o.size
	}
	sum := o.summary() // o belongs to e.mu from here on
	e.notifyLocked()
	e.mu.Unlock()
	if s != nil && drop == "" {
		_ = s.out.flush() // a write error ends the session; the result is re-sent on the next one
	}
	e.logEnd(t, sum, dur, drop, replaced)
}

// logEnd logs a dispatch's end.
func (e *Executor) logEnd(t *Task, o summary, dur time.Duration, drop, replaced string) {
	ctx := context.Background()
	level := slog.LevelDebug
	if replaced != "" || (!o.ok && drop == "") {
		level = slog.LevelWarn
	}
	if !e.log.Enabled(ctx, level) {
		return
	}
	attrs := append(taskAttrs(t), slog.Duration("duration", dur), slog.String("status", o.status()))
	if !o.ok {
		attrs = append(attrs, slog.Bool("retryable", o.retryable), slog.String("error", o.errText))
	}
	if drop != "" {
		attrs = append(attrs, slog.String("result_not_sent", drop))
	}
	if replaced != "" {
		attrs = append(attrs, slog.String("result_replaced", replaced))
	}
	e.log.LogAttrs(ctx, level, "task ended", attrs...)
}

func taskAttrs(t *Task) []slog.Attr {
	return []slog.Attr{
		slog.Uint64("task_id", t.ID),
		slog.Uint64("version", t.Version),
		slog.String("task_type", t.Type),
		slog.String("trace_id", t.TraceID),
		slog.Uint64("attempt", t.Attempt),
	}
}

package pipeline

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/apollo11/apollo11/client"
)

// Run records a submitted pipeline: the task of each step. It is
// what `apollo11 pipeline status` reads back (as JSON).
type Run struct {
	Name string `json:"name"`
	// TraceID is the trace_id every step of this run was submitted with,
	// new at each run: tools that group tasks by trace (the dashboard's
	// runs page) see the run as one. A step whose key returned an earlier
	// run's task keeps that run's trace.
	TraceID string    `json:"trace_id,omitempty"`
	Steps   []RunStep `json:"steps"`
}

// RunStep is one submitted step.
type RunStep struct {
	ID        string   `json:"id"`
	TaskID    uint64   `json:"task_id"`
	DependsOn []string `json:"depends_on,omitempty"`
}

// SubmitAndWait submits the plan (see Submit) and, with onDone set,
// follows every step to its end (see Watch.Wait).
func SubmitAndWait(ctx context.Context, c *client.Client, plan *Plan, onDone func(RunStep, client.Done)) (*Run, error) {
	run, pw, err := Submit(ctx, c, plan, onDone != nil)
	if err != nil || pw == nil {
		return run, err
	}
	defer pw.Close()
	return run, pw.Wait(ctx, onDone)
}

// Submit submits the plan's steps in order, each with depends_on
// the task ids of the steps it depends on (so dependencies always exist
// first and no cycle can reach the main control).
//
// When a submit is refused, what happens to the steps submitted before it
// depends on the key. Without one, the tasks this run made are cancelled
// and the error returned: nothing could pick them up again. With one,
// they are kept and the error says so: running the plan again with the
// same key (after queue_full, say) gets them back by their keys and
// submits the rest, which cancelling them would have made impossible, as
// a key keeps returning its task while the main control knows it, even a
// cancelled one. Steps whose key returned an existing task (a re-run) are
// never cancelled.
//
// With wait, every step is submitted with wait=true and the returned
// Watch follows them; the caller can record the run (every task
// id is known) before it waits.
//
// Every request is made under ctx: see SubmitEach for a timeout
// per request.
func Submit(ctx context.Context, c *client.Client, plan *Plan, wait bool) (*Run, *Watch, error) {
	return SubmitEach(c, plan, wait, func() (context.Context, context.CancelFunc) { return ctx, func() {} })
}

// SubmitEach is Submit with each request (a step's submit,
// the cancel of a step made before a refusal) under a context of its own
// from reqCtx: a timeout per request, say, as one timeout for a whole
// plan would have to grow with it, and none at all let a main control
// that never replies hold the caller for good.
func SubmitEach(c *client.Client, plan *Plan, wait bool, reqCtx func() (context.Context, context.CancelFunc)) (*Run, *Watch, error) {
	run := &Run{Name: plan.Name, TraceID: newTraceID()}
	pw := &Watch{run: run}
	ids := map[string]uint64{}
	var made []RunStep // the steps whose task this run created: a key may return another run's
	for _, s := range plan.Steps {
		req := client.SubmitRequest{Type: s.Type, Args: s.Args, Priority: s.Priority, MaxAttempts: s.MaxAttempts,
			Timeout: s.Timeout, Delay: s.Delay, Key: s.Key, TraceID: run.TraceID}
		for _, d := range s.DependsOn {
			req.DependsOn = append(req.DependsOn, ids[d])
		}
		sub, err := submitStep(c, req, wait, pw, reqCtx)
		if err != nil {
			pw.Close()
			err = fmt.Errorf("pipeline %s: step %s: %w", plan.Name, s.ID, err)
			if s.Key != "" {
				return run, nil, keptSteps(err, made)
			}
			return run, nil, errors.Join(err, cancelSteps(c, reqCtx, made))
		}
		ids[s.ID] = sub.ID
		step := RunStep{ID: s.ID, TaskID: sub.ID, DependsOn: s.DependsOn}
		run.Steps = append(run.Steps, step)
		if !sub.Duplicate {
			made = append(made, step)
			continue
		}
		if d := madeDependency(s.DependsOn, made); d != "" {
			// An earlier run's step, but one of its dependencies was
			// made anew: retention forgot that one's task, and its key
			// with it. The run would be half old, half new, the new
			// tasks depended on by nothing: take them back.
			pw.Close()
			cerr := cancelSteps(c, reqCtx, made)
			return run, nil, errors.Join(fmt.Errorf("pipeline %s: step %s is task %d of an earlier run with this key, "+
				"but step %s of that run has been forgotten by the main control (retention) and was submitted again: "+
				"give the run a new key to run it afresh", plan.Name, s.ID, sub.ID, d), cerr)
		}
	}
	if !wait {
		return run, nil, nil
	}
	return run, pw, nil
}

// newTraceID returns 32 random hex digits, the form of the trace ids the
// main control makes.
func newTraceID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// submitStep submits one step under a context from reqCtx; with wait,
// its watch joins pw.
func submitStep(c *client.Client, req client.SubmitRequest, wait bool, pw *Watch, reqCtx func() (context.Context, context.CancelFunc)) (client.Submitted, error) {
	ctx, cancel := reqCtx()
	defer cancel()
	if !wait {
		return c.Submit(ctx, req)
	}
	w, err := c.SubmitWatch(ctx, req) // the watch outlives ctx, which bounds only `submitted`
	if err != nil {
		return client.Submitted{}, err
	}
	pw.watches = append(pw.watches, w)
	return w.Submitted, nil
}

// keptSteps adds to a keyed run's refusal what became of the steps it
// made: kept, and how to finish or end them. Cancelling the made steps
// that depend on no other made step ends them all, as a cancel cascades
// to the steps waiting on it.
func keptSteps(err error, made []RunStep) error {
	if len(made) == 0 {
		return err
	}
	var roots []string
	for _, m := range made {
		if madeDependency(m.DependsOn, made) == "" {
			roots = append(roots, strconv.FormatUint(m.TaskID, 10))
		}
	}
	what := "task " + roots[0]
	if len(roots) > 1 {
		what = "tasks " + strings.Join(roots, ", ")
	}
	kept := fmt.Sprintf("the %d steps this run submitted before it are kept", len(made))
	if len(made) == 1 {
		kept = "the step this run submitted before it is kept"
	}
	return fmt.Errorf("%w; %s: once the cause is gone (room in the queue, or a fixed step), "+
		"run the pipeline again with the same key to submit the rest, or cancel %s to end them", err, kept, what)
}

// madeDependency returns the first of deps that this run made anew, or "".
func madeDependency(deps []string, made []RunStep) string {
	for _, d := range deps {
		for _, m := range made {
			if m.ID == d {
				return d
			}
		}
	}
	return ""
}

// Watch follows the steps of a pipeline submitted with wait.
type Watch struct {
	run     *Run
	watches []*client.Watch
}

// Wait returns when every step ended, calling onDone (from one goroutine
// at a time) as each ends, or when ctx ends or the connection is lost
// first: then the steps go on without being followed.
//
// Steps that ended before Wait was called (a chain's first steps end
// while its last ones are still being submitted) are reported first, in
// the plan's order; the others as they end.
func (pw *Watch) Wait(ctx context.Context, onDone func(RunStep, client.Done)) error {
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(pw.watches))
	ended := make([]bool, len(pw.watches))
	for i, w := range pw.watches {
		var d client.Done
		if d, ended[i], errs[i] = w.Ended(); ended[i] && errs[i] == nil {
			onDone(pw.run.Steps[i], d)
		}
	}
	for i, w := range pw.watches {
		if ended[i] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := w.Wait(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			mu.Lock()
			onDone(pw.run.Steps[i], d)
			mu.Unlock()
		}()
	}
	wg.Wait()
	unfollowed, first := 0, error(nil)
	for _, err := range errs {
		if err != nil {
			unfollowed++
			first = cmp.Or(first, err)
		}
	}
	if first != nil {
		return fmt.Errorf("%d of %d steps not followed to their end: %w", unfollowed, len(errs), first)
	}
	return nil
}

// Close stops following the steps: a Wait under way returns at once.
func (pw *Watch) Close() {
	for _, w := range pw.watches {
		w.Close()
	}
}

// cancelSteps cancels the tasks a run made before one of its submits
// was refused. A step whose key returned an earlier run's task is not
// among them: that run (say, the one a crashed client started) goes on.
func cancelSteps(c *client.Client, reqCtx func() (context.Context, context.CancelFunc), made []RunStep) error {
	var errs []error
	for _, s := range made {
		ctx, cancel := cleanupCtx(reqCtx)
		err := c.Cancel(ctx, s.TaskID)
		cancel()
		if err != nil && !client.IsCode(err, "illegal_transition") {
			errs = append(errs, fmt.Errorf("cannot cancel step %s (task %d): %w", s.ID, s.TaskID, err))
		}
	}
	return errors.Join(errs...)
}

// cleanupCtx is a context from reqCtx for taking a run's steps back. When
// the run ended because reqCtx's parent did (a Ctrl-C), the cancels are
// what the user asked for, not something to skip: such a context keeps
// its deadline but not its parent's end. Without a deadline it is
// reqCtx's as it is, so that nothing waits for good.
func cleanupCtx(reqCtx func() (context.Context, context.CancelFunc)) (context.Context, context.CancelFunc) {
	ctx, cancel := reqCtx()
	d, ok := ctx.Deadline()
	if ctx.Err() == nil || !ok {
		return ctx, cancel
	}
	cancel()
	return context.WithDeadline(context.WithoutCancel(ctx), d)
}

// Status queries every step of a run. A step whose task the main
// control no longer knows (ended long ago and dropped by retention) is in
// state "unknown", with the reason in Error: the other steps are still
// worth showing.
func Status(ctx context.Context, c *client.Client, run *Run) ([]client.TaskState, error) {
	out := make([]client.TaskState, len(run.Steps))
	for i, s := range run.Steps {
		st, err := c.Query(ctx, s.TaskID)
		if client.IsCode(err, "unknown_task") {
			st, err = client.TaskState{ID: s.TaskID, State: "unknown",
				Error: "no longer known to the main control (ended and dropped by retention)"}, nil
		}
		if err != nil {
			return out, fmt.Errorf("step %s (task %d): %w", s.ID, s.TaskID, err)
		}
		out[i] = st
	}
	return out, nil
}

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

// Run records a submitted pipeline with the task of each step.
// `apollo11 pipeline status` reads it back as JSON.
type Run struct {
	Name string `json:"name"`
	// RunID is the main control's run, when the plan went as one (8.10);
	// 0 when its steps were submitted one by one.
	RunID uint64 `json:"run_id,omitempty"`
	Key   string `json:"key,omitempty"`
	// TraceID is the trace_id every step of this run was submitted with.
	// It is new at each run. Tools that group tasks by trace see the run
	// as one, as the dashboard's runs page does. A step whose key returned
	// an earlier run's task keeps that run's trace.
	TraceID string    `json:"trace_id,omitempty"`
	Steps   []RunStep `json:"steps"`
}

// RunStep is one submitted step.
type RunStep struct {
	ID        string   `json:"id"`
	TaskID    uint64   `json:"task_id"`
	DependsOn []string `json:"depends_on,omitempty"`
}

// SubmitAndWait submits the plan (see Submit). With onDone set, it
// follows every step to its end (see Watch.Wait).
func SubmitAndWait(ctx context.Context, c *client.Client, plan *Plan, onDone func(RunStep, client.Done)) (*Run, error) {
	run, pw, err := Submit(ctx, c, plan, onDone != nil)
	if err != nil || pw == nil {
		return run, err
	}
	defer pw.Close()
	return run, pw.Wait(ctx, onDone)
}

// Submit submits the plan's steps in order. Each step's depends_on holds
// the task ids of the steps it depends on. So dependencies always exist
// first, and no cycle can reach the main control.
//
// When a submit is refused, the key decides what happens to the steps
// submitted before it. Without a key, the tasks this run made are
// cancelled and the error returned. Nothing could pick them up again.
// With a key, they are kept and the error says so. Running the plan again
// with the same key (after queue_full, say) gets them back by their keys.
// It then submits the rest. Cancelling them would make that impossible.
// A key keeps returning its task while the main control knows it, even a
// cancelled one. Steps whose key returned an existing task (a re-run) are
// never cancelled.
//
// With wait, every step is submitted with wait=true. The returned Watch
// follows them. The caller can record the run before it waits, since
// every task id is known.
//
// Every request is made under ctx. See SubmitEach for a timeout per
// request.
func Submit(ctx context.Context, c *client.Client, plan *Plan, wait bool) (*Run, *Watch, error) {
	return SubmitEach(c, plan, wait, func() (context.Context, context.CancelFunc) { return ctx, func() {} })
}

// SubmitEach is Submit with each request under a context of its own from
// reqCtx. A request is a step's submit, or the cancel of a step made
// before a refusal. The usual use is a timeout per request. One timeout
// for a whole plan would have to grow with the plan. With none at all, a
// main control that never replies would hold the caller for good.
func SubmitEach(c *client.Client, plan *Plan, wait bool, reqCtx func() (context.Context, context.CancelFunc)) (*Run, *Watch, error) {
	run := &Run{Name: plan.Name, TraceID: newTraceID()}
	if uses := plan.RunOnly(); len(uses) > 0 {
		return run, nil, fmt.Errorf("pipeline %s uses %s: only a main control with the runs feature can run it",
			plan.Name, strings.Join(uses, ", "))
	}
	pw := &Watch{run: run}
	ids := map[string]uint64{}
	var made []RunStep // the steps whose task this run created, as a key may return another run's
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
			// This is an earlier run's step, but one of its dependencies
			// was made anew. Retention forgot that one's task, and its
			// key with it. The run would be half old and half new, with
			// the new tasks depended on by nothing. So take them back.
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

// newTraceID returns 32 random hex digits. The main control makes trace
// ids of that form.
func newTraceID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// submitStep submits one step under a context from reqCtx. With wait,
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
// made. They were kept, and it says how to finish or end them. Cancelling
// the made steps that depend on no other made step ends them all. A
// cancel cascades to the steps waiting on it.
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

// Wait returns when every step ended. It calls onDone as each ends, from
// one goroutine at a time. It also returns when ctx ends or the
// connection is lost first. The steps then go on without being followed.
//
// Steps that ended before Wait was called are reported first, in the
// plan's order. That happens when a chain's first steps end while its
// last ones are still being submitted. The others are reported as they end.
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

// Close stops following the steps. A Wait under way returns at once.
func (pw *Watch) Close() {
	for _, w := range pw.watches {
		w.Close()
	}
}

// cancelSteps cancels the tasks a run made before one of its submits
// was refused. A step whose key returned an earlier run's task is not
// among them. That run goes on, say the one a crashed client started.
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

// cleanupCtx is a context from reqCtx for taking a run's steps back. The
// run may have ended because reqCtx's parent did, as on a Ctrl-C. Then
// the cancels are what the user asked for, not something to skip. So the
// context keeps reqCtx's deadline but not its parent's end. Without a
// deadline it is reqCtx's context as it is, so nothing waits for good.
func cleanupCtx(reqCtx func() (context.Context, context.CancelFunc)) (context.Context, context.CancelFunc) {
	ctx, cancel := reqCtx()
	d, ok := ctx.Deadline()
	if ctx.Err() == nil || !ok {
		return ctx, cancel
	}
	cancel()
	return context.WithDeadline(context.WithoutCancel(ctx), d)
}

// Status queries every step of a run. The main control may no longer know
// a step's task, as retention drops tasks that ended long ago. Such a step
// is in state "unknown", with the reason in Error. The other steps are
// still worth showing.
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

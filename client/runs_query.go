package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// RunQuery returns a run's state (`run_query`). An unknown id or key
// returns an *Error with code unknown_run.
func (c *Client) RunQuery(ctx context.Context, run RunRef) (RunState, error) {
	m, err := c.roundTrip(ctx, wire.KindRunQuery, wire.KindRunState, idempotent, run.fill)
	if err != nil {
		return RunState{}, err
	}
	rs, err := parseRunState(m)
	if err != nil {
		return RunState{}, fmt.Errorf("run_query: bad run_state: %w", err)
	}
	return rs, nil
}

func parseRunState(m *wire.Message) (RunState, error) {
	var errs []error
	num := uintsOf(m, &errs)
	rs := RunState{ID: num("run_id"), Name: m.Value("name"), Key: m.Value("key"), State: m.Value("state"),
		TraceID: m.Value("trace_id"), Resumes: num("resumes")}
	rs.Created, rs.Updated = unixMilli(num("created_ms")), unixMilli(num("updated_ms"))
	n := num("steps")
	if len(errs) == 0 && n > wire.MaxKeys {
		errs = append(errs, fmt.Errorf("steps=%d is more than a frame holds", n))
	}
	for i := range min(n, wire.MaxKeys) {
		p := "step." + strconv.FormatUint(i, 10) + "."
		s := RunStepState{ID: m.Value(p + "id"), TaskID: num(p + "task_id"), State: m.Value(p + "state"),
			Error: m.Value(p + "error"), When: m.Value(p + "when"), CompState: m.Value(p + "comp_state"),
			CompError: m.Value(p + "comp_error")}
		var err error
		if s.Optional, err = m.BoolOr(p+"optional", false); err != nil {
			errs = append(errs, err)
		}
		if s.CompTaskID, err = m.UintOr(p+"comp_task_id", 0); err != nil {
			errs = append(errs, err)
		}
		rs.Steps = append(rs.Steps, s)
	}
	return rs, errors.Join(errs...)
}

// RunQueryStep returns one step of a run with the args its task holds
// (`run_query step=`). Those are the template before the step's release,
// and the filled-in args after.
func (c *Client) RunQueryStep(ctx context.Context, run RunRef, step string) (RunStepInfo, error) {
	m, err := c.roundTrip(ctx, wire.KindRunQuery, wire.KindRunStep, idempotent, func(b *wire.Builder) {
		run.fill(b)
		b.Str("step", step)
	})
	if err != nil {
		return RunStepInfo{}, err
	}
	si := RunStepInfo{Step: m.Value("step"), State: m.Value("state"), Error: m.Value("error"), Args: prefixed(m, wire.PrefixArg)}
	if si.RunID, err = m.Uint("run_id"); err == nil {
		si.TaskID, err = m.Uint("task_id")
	}
	if err != nil {
		return RunStepInfo{}, fmt.Errorf("run_query: bad run_step: %w", err)
	}
	return si, nil
}

// RunList returns run ids in ascending order (`run_list`), of the given
// states, or all for none. It returns at most limit, above after. limit 0
// is the main control's default. next is non-zero when more follow. Pass
// it as after.
func (c *Client) RunList(ctx context.Context, states []string, limit int, after uint64) (ids []uint64, next uint64, err error) {
	if limit < 0 {
		return nil, 0, fmt.Errorf("run_list: negative limit %d", limit)
	}
	m, err := c.roundTrip(ctx, wire.KindRunList, wire.KindRuns, idempotent, func(b *wire.Builder) {
		if len(states) > 0 {
			b.List("state", states)
		}
		addPage(b, limit, after)
	})
	if err != nil {
		return nil, 0, err
	}
	return readPage(m, "run_list: bad runs")
}

// RunCancel cancels a run that has not ended and each of its tasks not
// ended (`run_cancel`). It returns how many tasks it cancelled. An ended
// run returns code illegal_transition.
func (c *Client) RunCancel(ctx context.Context, id uint64) (cancelled uint64, err error) {
	m, err := c.roundTrip(ctx, wire.KindRunCancel, wire.KindRunCancelled, oneShot, func(b *wire.Builder) { b.Uint("run_id", id) })
	if err != nil {
		return 0, err
	}
	if cancelled, err = m.UintOr("cancelled", 0); err != nil {
		return 0, fmt.Errorf("run_cancel: bad run_cancelled: %w", err)
	}
	return cancelled, nil
}

// RunResumeOptions are run_resume's optional values.
type RunResumeOptions struct {
	// From re-runs that step and every step that depends on it, even
	// those that succeeded.
	From string
	// Reason is each requeued task's requeue reason ("run resume" when "").
	Reason string
}

// RunResume finishes a failed or cancelled run (`run_resume`, which needs
// the admin proof). Succeeded steps are kept, and the others requeued. A
// run in another state returns code illegal_transition.
func (c *Client) RunResume(ctx context.Context, id uint64, o RunResumeOptions) (RunResumed, error) {
	m, err := c.roundTrip(ctx, wire.KindRunResume, wire.KindRunResumed, oneShot, func(b *wire.Builder) {
		b.Uint("run_id", id)
		if o.From != "" {
			b.Str("from", o.From)
		}
		if o.Reason != "" {
			b.Str("reason", o.Reason)
		}
	})
	if err != nil {
		return RunResumed{}, err
	}
	r := RunResumed{State: m.Value("state")}
	if r.ID, err = m.Uint("run_id"); err == nil {
		r.Requeued, err = m.List("requeued")
	}
	if err != nil {
		return RunResumed{}, fmt.Errorf("run_resume: bad run_resumed: %w", err)
	}
	return r, nil
}

// WaitRun waits until the run ends and returns its state, by querying
// it. It asks at once, then at intervals that grow from 50 ms to 1 s. It
// follows any run, across reconnects.
func (c *Client) WaitRun(ctx context.Context, run RunRef) (RunState, error) {
	delay := waitPollMin
	for {
		rs, err := c.RunQuery(ctx, run)
		if err != nil {
			return RunState{}, fmt.Errorf("wait for %s: %w", run, err)
		}
		if RunEnded(rs.State) {
			return rs, nil
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return RunState{}, fmt.Errorf("wait for %s: %w", run, ctx.Err())
		}
		delay = min(2*delay, waitPollMax)
	}
}

// RunSubmitWait submits with wait=true and waits for the run's
// `run_done`. onSubmitted, when set, gets the `run_submitted` reply as
// soon as it comes, so the caller can show the run while it goes on.
// When the connection is lost after `run_submitted`, the wait goes on by
// the run's id (WaitRun). When ctx ends first, the run goes on and the
// returned RunSubmitted holds its id.
func (c *Client) RunSubmitWait(ctx context.Context, r RunRequest, onSubmitted func(RunSubmitted)) (RunSubmitted, RunDone, error) {
	if err := r.validate(); err != nil {
		return RunSubmitted{}, RunDone{}, err
	}
	if err := ctx.Err(); err != nil {
		return RunSubmitted{}, RunDone{}, fmt.Errorf("run_submit: %w", err) // nothing sent
	}
	cl, req, err := c.start(ctx, wire.KindRunSubmit, r.fill(true), r.kind(), true)
	if err != nil {
		return RunSubmitted{}, RunDone{}, fmt.Errorf("run_submit: %w", err)
	}
	defer c.forget(req)
	var sub RunSubmitted
	for {
		m, err := c.await(ctx, cl, req)
		if err != nil {
			if sub.ID != 0 && errors.Is(err, ErrConnectionLost) && !c.opts.Reconnect.Off {
				rs, werr := c.WaitRun(ctx, RunRef{ID: sub.ID})
				return sub, RunDone{ID: rs.ID, State: rs.State}, werr
			}
			return sub, RunDone{}, fmt.Errorf("run_submit: %w", err)
		}
		switch m.Kind() {
		case wire.KindRunSubmitted:
			if sub, err = parseRunSubmitted(m); err != nil {
				return sub, RunDone{}, err
			}
			if onSubmitted != nil {
				onSubmitted(sub)
			}
		case wire.KindRunDone:
			d := RunDone{State: m.Value("state")}
			if d.ID, err = m.Uint("run_id"); err != nil {
				return sub, RunDone{}, fmt.Errorf("run_submit: bad run_done: %w", err)
			}
			return sub, d, nil
		case wire.KindError:
			return sub, RunDone{}, fmt.Errorf("run_submit: %w", wire.ErrorReplyOf(m))
		default:
			return sub, RunDone{}, fmt.Errorf("run_submit: unexpected reply %q", m.Type())
		}
	}
}

// ParseRunRef reads a run named on a command line. A number is a run id,
// and anything else a key.
func ParseRunRef(s string) RunRef {
	if id, err := strconv.ParseUint(s, 10, 64); err == nil && id > 0 && !strings.HasPrefix(s, "0") {
		return RunRef{ID: id}
	}
	return RunRef{Key: s}
}

package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/pipeline"
	"github.com/apollo11/apollo11/wire"
)

// runOptions are the flags of `pipeline run` that the run path reads.
type runOptions struct {
	wait, resume bool
	runFile      string
}

// runRunReport is what `pipeline run --json` and `pipeline resume --json`
// print for a run the main control keeps (protocol section 8.10).
type runRunReport struct {
	Name      string                `json:"name"`
	RunID     uint64                `json:"run_id"`
	Key       string                `json:"key,omitempty"`
	Duplicate bool                  `json:"duplicate,omitempty"`
	Resumed   *client.RunResumed    `json:"resumed,omitempty"`
	RunFile   string                `json:"run_file,omitempty"`
	State     string                `json:"state,omitempty"`
	Steps     []client.RunStepState `json:"steps"`
	Failed    int                   `json:"failed,omitempty"` // steps that did not succeed
}

// submitAsRun submits the plan as one run_submit. The main control then
// fills in output references, skips, compensates and can resume it.
func submitAsRun(ctx context.Context, cl *client.Client, cf *clientFlags, plan *pipeline.Plan, o runOptions, stdout, stderr io.Writer) error {
	trace := pipeline.NewTraceID()
	req, err := plan.RunRequest(trace)
	if err != nil {
		return err
	}
	record := func(sub client.RunSubmitted) {
		// Recorded before any wait, so `pipeline status` finds the run
		// meanwhile, or after this process is gone.
		if werr := writeRunFile(o.runFile, pipeline.RunOf(plan, sub, trace)); werr != nil {
			fmt.Fprintf(stderr, "warning: %v\n", werr)
		}
		if cf.asJSON {
			return
		}
		// A key that names a run made before submits nothing. Say the run
		// was found, not submitted, before any resume or wait.
		waiting := ""
		if o.wait {
			waiting = "; waiting for it to end"
		}
		switch {
		case !sub.Duplicate && o.wait:
			fmt.Fprintf(stderr, "pipeline %s submitted as run %d: %d steps%s\n", plan.Name, sub.ID, len(plan.Steps), waiting)
		case sub.Duplicate && o.resume:
			fmt.Fprintf(stderr, "pipeline %s: key %s names run %d, made before\n", plan.Name, plan.Key, sub.ID)
		case sub.Duplicate:
			fmt.Fprintf(stderr, "pipeline %s: key %s names run %d, made before: nothing new was made "+
				"(--resume finishes it if it failed)%s\n", plan.Name, plan.Key, sub.ID, waiting)
		}
	}
	var sub client.RunSubmitted
	var done *client.RunDone
	if o.wait && !o.resume {
		sub, done, err = submitRunWait(ctx, cl, cf, req, record)
	} else {
		rctx, cancel := cf.ctxFrom(ctx)
		sub, err = cl.RunSubmit(rctx, req)
		cancel()
		if err == nil {
			record(sub)
		}
	}
	if err != nil {
		return cf.timedOut(fmt.Errorf("pipeline %s: %w", plan.Name, err))
	}
	report := runRunReport{Name: plan.Name, RunID: sub.ID, Key: plan.Key, Duplicate: sub.Duplicate, RunFile: o.runFile}
	if sub.Duplicate && o.resume {
		if report.Resumed, err = resumeIfEnded(ctx, cl, cf, sub.ID, o.wait, stderr); err != nil {
			return err
		}
	}
	if !o.wait {
		if report.Steps, err = submittedSteps(ctx, cl, cf, plan, sub); err != nil {
			return err
		}
		if cf.asJSON {
			return printJSON(stdout, report)
		}
		for _, s := range report.Steps {
			fmt.Fprintf(stdout, "%-20s task %d\n", s.ID, s.TaskID)
		}
		what := "submitted as run " + strconv.FormatUint(sub.ID, 10)
		switch {
		case report.Resumed != nil:
			what = "run " + strconv.FormatUint(sub.ID, 10) + " resumed"
		case sub.Duplicate:
			what = "run " + strconv.FormatUint(sub.ID, 10) + " found by its key"
		}
		fmt.Fprintf(stdout, "pipeline %s %s: %d steps (follow with: apollo11 pipeline status %d%s)\n",
			plan.Name, what, len(report.Steps), sub.ID, cf.target())
		return nil
	}
	return waitRunEnd(ctx, cl, cf, sub.ID, done, &report, stdout)
}

// submittedSteps returns the run's steps with their task ids. A key may
// name a run made from another version of the file. Its steps are the
// main control's, not the plan's.
func submittedSteps(ctx context.Context, cl *client.Client, cf *clientFlags, plan *pipeline.Plan, sub client.RunSubmitted) ([]client.RunStepState, error) {
	if !sub.Duplicate && len(sub.TaskIDs) == len(plan.Steps) {
		steps := make([]client.RunStepState, len(plan.Steps))
		for i, s := range plan.Steps {
			steps[i] = client.RunStepState{ID: s.ID, TaskID: sub.TaskIDs[i]}
		}
		return steps, nil
	}
	rctx, cancel := cf.ctxFrom(ctx)
	defer cancel()
	rs, err := cl.RunQuery(rctx, client.RunRef{ID: sub.ID})
	if err != nil {
		return nil, cf.timedOut(fmt.Errorf("run %d: %w", sub.ID, err))
	}
	return rs.Steps, nil
}

// submitRunWait submits with wait=true. The run_submitted reply must come
// within --request-timeout, as every request's; the run's end may take
// as long as it takes.
func submitRunWait(ctx context.Context, cl *client.Client, cf *clientFlags, req client.RunRequest,
	record func(client.RunSubmitted)) (client.RunSubmitted, *client.RunDone, error) {
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	slow := fmt.Errorf("no reply within --request-timeout %v", cf.timeout)
	timer := time.AfterFunc(cf.timeout, func() { cancel(slow) })
	defer timer.Stop()
	submitted := false
	sub, done, err := cl.RunSubmitWait(wctx, req, func(s client.RunSubmitted) {
		timer.Stop()
		submitted = true
		record(s)
	})
	if err != nil {
		if !submitted && errors.Is(context.Cause(wctx), slow) {
			err = fmt.Errorf("%w (%w)", err, slow)
		}
		if submitted {
			return sub, nil, exitError{Code: exitUnknown, Err: fmt.Errorf("%w; the run goes on (follow with: apollo11 pipeline status %d%s)", err, sub.ID, cf.target())}
		}
		return sub, nil, err
	}
	return sub, &done, nil
}

// resumeIfEnded resumes the run when it ended failed or cancelled. A run
// still going, or one that succeeded, is left as it is.
func resumeIfEnded(ctx context.Context, cl *client.Client, cf *clientFlags, id uint64, wait bool, stderr io.Writer) (*client.RunResumed, error) {
	waiting := ""
	if wait {
		waiting = "; waiting for it to end"
	}
	rctx, cancel := cf.ctxFrom(ctx)
	defer cancel()
	rs, err := cl.RunQuery(rctx, client.RunRef{ID: id})
	if err != nil {
		return nil, fmt.Errorf("run %d: %w", id, err)
	}
	if rs.State != client.RunFailed && rs.State != client.RunCancelled {
		if !cf.asJSON {
			fmt.Fprintf(stderr, "run %d is %s: nothing to resume%s\n", id, rs.State, waiting)
		}
		return nil, nil
	}
	r, err := cl.RunResume(rctx, id, client.RunResumeOptions{})
	if err != nil {
		return nil, explainResume(id, err)
	}
	if !cf.asJSON {
		fmt.Fprintf(stderr, "run %d resumed: requeued %s%s\n", id, orNone(r.Requeued), waiting)
	}
	return &r, nil
}

func orNone(ids []string) string {
	if len(ids) == 0 {
		return "nothing"
	}
	return strings.Join(ids, ", ")
}

// waitRunEnd waits for the run's end, or takes done when run_done already
// told it. It prints its steps. It exits 0 if the run succeeded, 1 if it
// ended otherwise, and 4 if the wait ended first.
func waitRunEnd(ctx context.Context, cl *client.Client, cf *clientFlags, id uint64, done *client.RunDone,
	report *runRunReport, stdout io.Writer) error {
	var rs client.RunState
	var err error
	if done != nil {
		rctx, cancel := cf.ctxFrom(ctx)
		rs, err = cl.RunQuery(rctx, client.RunRef{ID: id})
		cancel()
	} else {
		rs, err = cl.WaitRun(ctx, client.RunRef{ID: id})
	}
	if err != nil {
		return exitError{Code: exitUnknown, Err: fmt.Errorf("%w; the run goes on (follow with: apollo11 pipeline status %d%s)", cf.timedOut(err), id, cf.target())}
	}
	report.State, report.Steps, report.Name = rs.State, rs.Steps, cmp.Or(report.Name, rs.Name)
	for _, s := range rs.Steps {
		if s.State != "succeeded" {
			report.Failed++
		}
	}
	if cf.asJSON {
		if err := printJSON(stdout, report); err != nil {
			return err
		}
	} else {
		printRunState(stdout, rs)
		printRunSummary(stdout, report, len(rs.Steps))
	}
	if rs.State != client.RunSucceeded {
		return exitError{Code: exitFailed}
	}
	return nil
}

// printRunState prints a run and its steps, one line each, with the
// compensation of each step that has one.
func printRunState(w io.Writer, rs client.RunState) {
	head := fmt.Sprintf("run %d %s", rs.ID, shown(rs.Name))
	if rs.Key != "" {
		head += " (key " + shown(rs.Key) + ")"
	}
	head += ": " + rs.State
	switch {
	case rs.Resumes == 1:
		head += ", resumed 1 time"
	case rs.Resumes > 1:
		head += fmt.Sprintf(", resumed %d times", rs.Resumes)
	}
	fmt.Fprintln(w, head)
	for _, s := range rs.Steps {
		line := fmt.Sprintf("%-20s task %-8d %s", s.ID, s.TaskID, cmp.Or(s.State, "forgotten"))
		if s.Optional {
			line += "  optional"
		}
		if s.When != "" {
			line += "  when=" + s.When
		}
		switch {
		case s.Error == "":
		case stepEnded(s.State):
			line += "  (" + shown(s.Error) + ")"
		default:
			// A requeued step keeps its last end's error until it ends again.
			line += "  (last error: " + shown(s.Error) + ")"
		}
		fmt.Fprintln(w, line)
		if s.CompTaskID != 0 {
			line = fmt.Sprintf("  compensation     task %-8d %s", s.CompTaskID, cmp.Or(s.CompState, "forgotten"))
			if s.CompError != "" {
				line += "  (" + shown(s.CompError) + ")"
			}
			fmt.Fprintln(w, line)
		}
	}
	switch rs.State {
	case client.RunFailed, client.RunCancelled:
		fmt.Fprintln(w, resumeHint(rs))
	}
}

// stepEnded reports whether a step's task state is an end, or unknown.
func stepEnded(state string) bool {
	switch state {
	case "", "succeeded", "failed", "cancelled":
		return true
	}
	return false
}

// missingOut reads the main control's error of a step whose argument
// named an output that its step did not make.
var missingOut = regexp.MustCompile(`^missing output: step (\S+) has no out\.(\S+)$`)

// resumeHint is the resume that can work for an ended run. A plain resume
// of a step short of an output is refused. That output's step must run
// again, and when it never makes the output only a new run helps.
func resumeHint(rs client.RunState) string {
	for _, s := range rs.Steps {
		if m := missingOut.FindStringSubmatch(s.Error); m != nil {
			return fmt.Sprintf("resume with: apollo11 pipeline resume %d --from %s, if step %s may make out.%s this time; "+
				"if it never does, correct the file and run it under a new key", rs.ID, m[1], m[1], m[2])
		}
	}
	return fmt.Sprintf("resume with: apollo11 pipeline resume %d", rs.ID)
}

// printRunSummary ends a followed run with one line, as the step-by-step
// path does. It says how many steps did not succeed, and what the run
// became.
func printRunSummary(w io.Writer, r *runRunReport, steps int) {
	name := r.Name
	switch {
	case r.State == client.RunSucceeded && r.Failed == 0:
		fmt.Fprintf(w, "pipeline %s: all %d steps succeeded (run %d)\n", name, steps, r.RunID)
	case r.State == client.RunSucceeded:
		fmt.Fprintf(w, "pipeline %s: run %d succeeded; %d of %d steps did not succeed, being optional or skipped\n", name, r.RunID, r.Failed, steps)
	default:
		fmt.Fprintf(w, "pipeline %s: %d of %d steps did not succeed (run %d %s)\n", name, r.Failed, steps, r.RunID, r.State)
	}
}

// needRuns refuses a run command on a main control without runs.
func needRuns(cl *client.Client, cf *clientFlags) error {
	if cl.HasFeature(wire.FeatureRuns) {
		return nil
	}
	return fmt.Errorf("the main control at %s does not keep runs (no runs in its welcome's features): "+
		"use pipeline status --run-file for a pipeline submitted step by step", cf.addr)
}

// resolveRun turns RUN (a run id, or a key) into a run id.
func resolveRun(ctx context.Context, cl *client.Client, cf *clientFlags, arg string) (uint64, error) {
	ref := client.ParseRunRef(arg)
	if ref.ID != 0 {
		return ref.ID, nil
	}
	rctx, cancel := cf.ctxFrom(ctx)
	defer cancel()
	rs, err := cl.RunQuery(rctx, ref)
	if err != nil {
		return 0, err
	}
	return rs.ID, nil
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/wire"
)

// runPipelineResume is `pipeline resume RUN [--from STEP]`. It finishes a
// failed or cancelled run. Succeeded steps are kept. The others run again,
// and with --from so do that step and all that depend on it.
func runPipelineResume(args []string, stdout, stderr io.Writer) error {
	var from, reason string
	var wait bool
	extra := func(fs *flag.FlagSet) {
		fs.StringVar(&from, "from", "", "in a failed or cancelled run, re-run this step and every step that depends on it, even those that succeeded")
		fs.StringVar(&reason, "reason", "", "the requeue reason of the steps that run again (default: run resume)")
		fs.BoolVar(&wait, "wait", false, "follow the run to its end; exit 0 if it succeeded, 1 otherwise, 4 if the wait ended first")
	}
	return runCommand("pipeline resume", "pipeline resume RUN [--from STEP] [flags]", args, stdout, extra,
		func(ctx context.Context, cf *clientFlags, cl *client.Client, id uint64) error {
			rctx, cancel := cf.ctxFrom(ctx)
			r, err := cl.RunResume(rctx, id, client.RunResumeOptions{From: from, Reason: reason})
			cancel()
			if err != nil {
				return explainResume(id, err)
			}
			report := runRunReport{RunID: id, Resumed: &r}
			if !wait {
				if cf.asJSON {
					return printJSON(stdout, report)
				}
				fmt.Fprintf(stdout, "run %d resumed: %s; requeued %s\n", id, r.State, orNone(r.Requeued))
				return nil
			}
			if !cf.asJSON {
				fmt.Fprintf(stderr, "run %d resumed: requeued %s; waiting for it to end\n", id, orNone(r.Requeued))
			}
			return waitRunEnd(ctx, cl, cf, id, nil, &report, stdout)
		})
}

// showRun is `pipeline status RUN`, the run as the main control keeps it.
func showRun(cl *client.Client, cf *clientFlags, arg string, stdout io.Writer) error {
	if err := needRuns(cl, cf); err != nil {
		return err
	}
	ctx, cancel := cf.ctx()
	defer cancel()
	rs, err := cl.RunQuery(ctx, client.ParseRunRef(arg))
	if err != nil {
		return err
	}
	if cf.asJSON {
		return printJSON(stdout, rs)
	}
	printRunState(stdout, rs)
	return nil
}

// fromWire finds the wire form "(from=STEP)" in a refusal of a resume.
var fromWire = regexp.MustCompile(`\(from=([^)]*)\)$`)

// resumeRefused is a refused resume, told as the CLI is used. It says
// what to do instead, with flags where the main control names wire fields.
type resumeRefused struct {
	text string
	err  error
}

func (e *resumeRefused) Error() string { return e.text }
func (e *resumeRefused) Unwrap() error { return e.err }

// explainResume adds what to do to the main control's refusal of a resume.
func explainResume(id uint64, err error) error {
	ref, ok := errors.AsType[*wire.ErrorReply](err)
	if !ok || ref.Code != wire.CodeIllegalTransition {
		return fmt.Errorf("resume run %d: %w", id, err)
	}
	msg := ref.Message
	switch {
	case strings.Contains(msg, " was rolled back"), strings.Contains(msg, " was (partly) rolled back"):
		msg += "; a rolled-back run is not resumed: run the pipeline again under a new key (pipeline run FILE with a new --var in its key)"
	case strings.Contains(msg, " has succeeded; "):
		msg += " (--from too): to run its steps again, run the pipeline under a new key (pipeline run FILE with a new --var in its key)"
	case strings.Contains(msg, "only a failed or cancelled run is resumed"):
		msg += fmt.Sprintf(": wait for its end (apollo11 pipeline status %d), then resume it if it failed", id)
	default:
		if m := fromWire.FindStringSubmatchIndex(msg); m != nil {
			step := msg[m[2]:m[3]]
			msg = msg[:m[0]] + "(--from " + step + ") if it may make it this time; " +
				"if the file names an output the step never makes, only a new run fixes it: correct the file, run it under a new key"
		}
	}
	return &resumeRefused{text: fmt.Sprintf("resume run %d: %s", id, msg), err: err}
}

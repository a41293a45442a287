package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/wire"
)

// Exit codes of `submit`. A failed task exits 1, so any other error of
// submit exits 2, and a script can tell a dead-letter task from a main
// control it could not reach.
const (
	exitFailed    = 1
	exitError2    = 2
	exitCancelled = 3
	exitUnknown   = 4 // submitted, but the wait ended before the task did
)

// kvFlag collects repeated --arg k=v.
type kvFlag map[string]string

func (k kvFlag) String() string { return "" }
func (k kvFlag) Set(s string) error {
	key, val, ok := strings.Cut(s, "=")
	if !ok || key == "" {
		return fmt.Errorf("want k=v, got %q", s)
	}
	if old, dup := k[key]; dup {
		// A payload holds a key once. Keeping either would drop the
		// other without a word.
		return fmt.Errorf("%q is given twice (%q and %q)", key, old, val)
	}
	k[key] = val
	return nil
}

// idsFlag collects task ids from comma-separated lists. It may be
// repeated. Each item must be a task id as the wire writes it, with no
// empty items, spaces or leading zeros (spec section 2). So a list the
// main control would refuse, or read differently, is refused here.
type idsFlag []uint64

func (f *idsFlag) String() string { return "" }
func (f *idsFlag) Set(s string) error {
	for _, item := range strings.Split(s, ",") {
		id, ok := wire.ParseUint(item)
		if !ok || id == 0 {
			return fmt.Errorf("%q is not a task id (ids are comma-separated, with no spaces or empty items)", item)
		}
		*f = append(*f, id)
	}
	return nil
}

func runSubmit(args []string, stdout, stderr io.Writer) error {
	var (
		req       client.SubmitRequest
		argsFlag  = kvFlag{}
		deps      idsFlag
		wait      bool
		waitLimit time.Duration
		hintAfter time.Duration
	)
	extra := func(fs *flag.FlagSet) {
		fs.StringVar(&req.Type, "type", "", "task type (required)")
		fs.Var(argsFlag, "arg", "task argument k=v, k of a-z 0-9 _ . - (repeat for more)")
		fs.IntVar(&req.Priority, "priority", 0, "priority 0-9, 9 most urgent")
		fs.IntVar(&req.MaxAttempts, "max-attempts", 0, "attempts before the task fails, at least 1 (default the type's policy, else 3)")
		durationVar(fs, &req.Timeout, "timeout", 0, "time limit of each attempt, from its start (0: none)")
		durationVar(fs, &req.Delay, "delay", 0, "do not dispatch before this much time")
		fs.StringVar(&req.Key, "key", "", "idempotency key: a known key returns its task instead")
		fs.StringVar(&req.TraceID, "trace-id", "", "trace id (default: a new one)")
		fs.StringVar(&req.Label, "label", "", "free text shown by status, at most 256 bytes")
		fs.Var(&deps, "depends-on", "comma-separated task ids that must succeed first (repeat for more)")
		fs.BoolVar(&req.Optional, "optional", false, "if this task fails or is cancelled, its dependents run as if it had succeeded")
		fs.StringVar(&req.When, "when", "", "failed: run only once every --depends-on task ended and one failed or was cancelled, else end skipped")
		fs.BoolVar(&wait, "wait", false, "wait until the task ends; exit 0 if it succeeded, 1 failed, 3 cancelled, 4 unknown (the wait ended first)")
		durationVar(fs, &waitLimit, "wait-timeout", 0, "give up waiting after this long (0: wait forever)")
		durationVar(fs, &hintAfter, "pending-hint", 5*time.Second, "with --wait, say on stderr when the task is still pending this long after its --delay, as when no executor takes its type (0: never)")
	}
	check := func(fs *flag.FlagSet) error {
		if req.MaxAttempts < 1 && flagSet(fs, "max-attempts") {
			// The client leaves 0 out, which would get the default.
			return fmt.Errorf("--max-attempts %d: must be at least 1", req.MaxAttempts)
		}
		if waitLimit < 0 {
			return fmt.Errorf("--wait-timeout %v: must not be negative (0 waits for good)", waitLimit)
		}
		if hintAfter < 0 {
			return fmt.Errorf("--pending-hint %v: must not be negative (0 gives none)", hintAfter)
		}
		req.Args, req.DependsOn = argsFlag, deps
		return flagNames(req.Validate())
	}
	err := clientCommand("submit", "submit --type T [--arg k=v ...] [flags]", false, args, stdout, extra, check,
		func(fs *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			if !wait {
				ctx, cancel := cf.ctx()
				defer cancel()
				sub, err := cl.Submit(ctx, req)
				if err != nil {
					return submitFailed(stdout, cf, fs, req.Key, ctx, err)
				}
				return printSubmitted(stdout, cf.asJSON, sub)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			if waitLimit > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeoutCause(ctx, waitLimit, fmt.Errorf("--wait-timeout %v ran out", waitLimit))
				defer cancel()
			}
			// The wait for `submitted` is a request like any other. It
			// gets --request-timeout, within --wait-timeout. So a main
			// control that never confirms does not hold it for good.
			subCtx, cancel := cf.ctxFrom(ctx)
			defer cancel()
			w, err := cl.SubmitWatch(subCtx, req)
			if err != nil {
				return submitFailed(stdout, cf, fs, req.Key, subCtx, err)
			}
			defer w.Close()
			// A task nobody runs waits for good. Say it was submitted.
			fmt.Fprintf(stderr, "task %d submitted; waiting for it to end\n", w.Submitted.ID)
			stopHint := pendingHint(stderr, cl, w.Submitted.ID, req, hintAfter, cf.timeout, waitLimit == 0)
			done, err := w.Wait(ctx)
			stopHint()
			if err != nil {
				return waitEnded(stdout, cf.asJSON, cl, w.Submitted.ID, waitLimit, err)
			}
			if err := printDone(stdout, cf.asJSON, w.Submitted, done); err != nil {
				return err
			}
			switch done.State {
			case "succeeded":
				return nil
			case "cancelled":
				return exitError{Code: exitCancelled}
			}
			return exitError{Code: exitFailed}
		})
	var ee exitError
	if err != nil && !errors.Is(err, flag.ErrHelp) && !errors.As(err, &ee) {
		return exitError{Code: exitError2, Err: err}
	}
	return err
}

// flagNames words the client's check of a submit in the flags' names
// ("Priority 10" is --priority 10 here).
func flagNames(err error) error {
	if err == nil {
		return nil
	}
	msg := strings.TrimPrefix(err.Error(), "submit: ")
	for _, r := range [][2]string{{"Priority", "--priority"}, {"MaxAttempts", "--max-attempts"},
		{"Timeout or Delay", "--timeout or --delay"}, {"Type", "--type"}} {
		msg = strings.Replace(msg, r[0], r[1], 1)
	}
	return errors.New(msg)
}

// submitFailed words a submit that got no `submitted`. One that was never
// sent exits 2. One sent with no reply, after ctx's deadline or a lost
// connection, may have made its task. Its outcome is unknown, exit 4.
func submitFailed(stdout io.Writer, cf *clientFlags, fs *flag.FlagSet, key string, ctx context.Context, err error) error {
	if !errors.Is(err, client.ErrNoReply) {
		if ctx.Err() != nil {
			return fmt.Errorf("nothing submitted: %w", context.Cause(ctx))
		}
		return err
	}
	why := err
	if ctx.Err() != nil {
		why = context.Cause(ctx)
	}
	err = fmt.Errorf("the submit was sent but not confirmed (%v): %s", why, unconfirmedAdvice(key, cf.targetArgs(fs)))
	if cf.asJSON {
		_ = printJSON(stdout, map[string]any{"outcome": "unknown", "error": err.Error()})
	}
	return exitError{Code: exitUnknown, Err: err}
}

// unconfirmedAdvice says how to learn the outcome of a submit that may
// have made its task. With a key, submitting again tells, as the key
// returns the task if it exists. Without one, a second submit can make a
// second task, and only the task lists can tell. target is the --addr
// and --token-file that reach the same main control.
func unconfirmedAdvice(key, target string) string {
	if key != "" {
		return "the task may exist; submit again with the same --key to find out"
	}
	return "the task may exist, and submitting again may make a second one; `apollo11 list" + target +
		" --state pending` (or another --state) lists the tasks. With --key, a retry with the same key returns the task instead"
}

// waitEnded explains a wait that ended before the task. It says where the
// task stands, when the main control still answers. It exits 4, and with
// --json also prints what is known. So a script can follow the task by id.
func waitEnded(stdout io.Writer, asJSON bool, cl *client.Client, id uint64, limit time.Duration, err error) error {
	state := "unknown"
	if errors.Is(err, context.DeadlineExceeded) {
		qctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = fmt.Errorf("gave up waiting after --wait-timeout %v; task %d's outcome is unknown", limit, id)
		if ts, qerr := cl.Query(qctx, id); qerr == nil {
			state = ts.State
			err = fmt.Errorf("gave up waiting after --wait-timeout %v: task %d is still %s", limit, id, state)
		}
	} else {
		err = fmt.Errorf("task %d submitted, but its outcome is unknown: %w", id, err)
	}
	if asJSON {
		_ = printJSON(stdout, map[string]any{"task_id": id, "state": state, "outcome": "unknown", "error": err.Error()})
	}
	return exitError{Code: exitUnknown, Err: err}
}

func printSubmitted(w io.Writer, asJSON bool, s client.Submitted) error {
	if asJSON {
		return printJSON(w, map[string]any{"task_id": s.ID, "duplicate": s.Duplicate})
	}
	if s.Duplicate {
		_, err := fmt.Fprintf(w, "task %d (duplicate key: no new task)\n", s.ID)
		return err
	}
	_, err := fmt.Fprintf(w, "task %d submitted\n", s.ID)
	return err
}

func printDone(w io.Writer, asJSON bool, s client.Submitted, d client.Done) error {
	if asJSON {
		return printJSON(w, map[string]any{"task_id": d.ID, "duplicate": s.Duplicate, "state": d.State,
			"out": d.Out, "error": d.Error})
	}
	fmt.Fprintf(w, "task %d %s\n", d.ID, d.State)
	if d.Error != "" {
		fmt.Fprintf(w, "error: %s\n", shown(d.Error))
	}
	printOut(w, d.Out)
	return nil
}

func printOut(w io.Writer, out map[string]string) {
	keys := slices.Sorted(maps.Keys(out))
	for _, k := range keys {
		fmt.Fprintf(w, "out.%s=%s\n", k, shown(out[k]))
	}
}

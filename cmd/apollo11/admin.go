package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/apollo11/apollo11/client"
)

// The admin commands are requeue, cancel by filter and purge (protocol 8.3
// and 8.4). With a main control that has --admin-token-file they need
// --admin-token-file too.

// filterFlags are the bulk requests' filter as flags.
type filterFlags struct {
	typ, states, errText, before, after string
	limit                               int
	dryRun                              bool
	now                                 func() time.Time
}

func (f *filterFlags) register(fs *flag.FlagSet, ended bool) {
	fs.StringVar(&f.typ, "type", "", "only tasks of this task type")
	fs.StringVar(&f.states, "state", "", "only tasks in these states (comma-separated; \"all\": every state the command acts on)")
	fs.StringVar(&f.errText, "error", "", "only tasks whose error text contains this text")
	if ended {
		fs.StringVar(&f.before, "ended-before", "", "only tasks that ended before this time: RFC 3339, or a duration meaning that long ago (1h)")
		fs.StringVar(&f.after, "ended-after", "", "only tasks that ended at or after this time: RFC 3339, or a duration meaning that long ago")
	}
	fs.IntVar(&f.limit, "limit", 1000, "tasks changed per request, 1 to 1000 (the command repeats the request to the end)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "count the tasks only; change nothing")
	f.now = time.Now
}

// set reports whether any filter flag was given.
func (f *filterFlags) set() bool {
	return f.typ != "" || f.states != "" || f.errText != "" || f.before != "" || f.after != ""
}

// filter builds the client's filter, checking the flags.
func (f *filterFlags) filter(acts []string) (client.Filter, error) {
	cf := client.Filter{Type: f.typ, Error: f.errText, DryRun: f.dryRun, Limit: f.limit}
	for _, name := range []string{"type", "state", "error", "ended-before", "ended-after"} {
		if v := app.FromEnv(name); v != "" {
			// A variable left from another command must not pick the
			// tasks a command changes, or widen them.
			return cf, fmt.Errorf("--%s is set by %s in the environment: give a filter of tasks to change on the command line", name, v)
		}
	}
	if !f.set() {
		return cf, fmt.Errorf("give task ids, or a filter: --type, --state, --error, --ended-before or --ended-after")
	}
	if f.limit < 1 || f.limit > 1000 {
		return cf, fmt.Errorf("--limit %d: want 1 to 1000", f.limit)
	}
	switch f.states {
	case "":
	case "all":
		cf.AllStates = true
	default:
		for _, s := range strings.Split(f.states, ",") {
			if !slices.Contains(acts, s) {
				return cf, fmt.Errorf("--state %q: want states among %s, or all", s, strings.Join(acts, ", "))
			}
			cf.States = append(cf.States, s)
		}
	}
	var err error
	if cf.EndedBefore, err = f.when("ended-before", f.before); err != nil {
		return cf, err
	}
	cf.EndedAfter, err = f.when("ended-after", f.after)
	return cf, err
}

// when reads a time flag, as RFC 3339 or as a duration that long ago.
func (f *filterFlags) when(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return f.now().Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil || t.UnixMilli() < 1 {
		return time.Time{}, fmt.Errorf("--%s %q: want an RFC 3339 time (2026-12-01T10:00:00Z) or a duration (1h)", name, v)
	}
	return t, nil
}

// runBulk follows a bulk request to the end and prints its totals. verb
// names what it did ("requeued").
func runBulk(stdout io.Writer, cf *clientFlags, f client.Filter, verb string,
	page func(ctx context.Context, f client.Filter) (client.Matched, error)) error {
	total, err := client.BulkAll(f, cf.ctx, page)
	if err != nil {
		if total.Count+total.Skipped > 0 {
			err = fmt.Errorf("%w (before this, %s %s)", err, nTasks(total.Count), verb)
		}
		return err
	}
	if cf.asJSON {
		return printJSON(stdout, total)
	}
	_, err = io.WriteString(stdout, bulkLine(total, verb))
	return err
}

// bulkLine is the totals line of a bulk command: "1 task requeued",
// "3 tasks would be cancelled, 1 matched but skipped".
func bulkLine(total client.Matched, verb string) string {
	what := verb
	if total.DryRun {
		what = "would be " + verb
	}
	if total.Skipped > 0 {
		return fmt.Sprintf("%s %s, %d matched but skipped\n", nTasks(total.Count), what, total.Skipped)
	}
	return fmt.Sprintf("%s %s\n", nTasks(total.Count), what)
}

// nTasks is "1 task" or "N tasks".
func nTasks(n uint64) string {
	if n == 1 {
		return "1 task"
	}
	return fmt.Sprintf("%d tasks", n)
}

func runRequeue(args []string, stdout, stderr io.Writer) error {
	var ff filterFlags
	var o client.RequeueOptions
	var ids []uint64
	extra := func(fs *flag.FlagSet) {
		fs.BoolVar(&o.KeepAttempts, "keep-attempts", false, "keep the attempts used; without it they start again from 0")
		fs.StringVar(&o.Reason, "reason", "", "why, kept with each task and shown by status (up to 256 bytes)")
		ff.register(fs, true)
	}
	check := func(fs *flag.FlagSet) error {
		for _, a := range fs.Args() {
			id, err := parseTaskID(a)
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		if len(ids) > 0 && !ff.set() {
			return nil
		}
		if _, err := ff.filter([]string{"failed", "cancelled"}); err != nil {
			return err
		}
		if len(ids) > 0 {
			return fmt.Errorf("give task ids or a filter, not both")
		}
		return nil
	}
	return clientCommand("requeue", "requeue [flags] TASK_ID... | requeue [flags] --type T --state failed [--dry-run]", true,
		args, stdout, extra, check,
		func(fs *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			if len(ids) == 0 {
				f, _ := ff.filter([]string{"failed", "cancelled"})
				return runBulk(stdout, cf, f, "requeued", func(ctx context.Context, f client.Filter) (client.Matched, error) {
					return cl.RequeueWhere(ctx, f, o)
				})
			}
			var done []client.Requeued
			var errs []error
			for _, id := range ids {
				ctx, cancel := cf.ctx()
				r, err := cl.Requeue(ctx, id, o)
				cancel()
				if err != nil {
					errs = append(errs, fmt.Errorf("task %d: %w", id, err))
					continue
				}
				done = append(done, r)
				if !cf.asJSON {
					fmt.Fprintf(stdout, "task %d requeued: %s (version %d)\n", r.ID, r.State, r.Version)
				}
			}
			if cf.asJSON {
				if err := printJSON(stdout, done); err != nil {
					return err
				}
			}
			return errors.Join(errs...)
		})
}

func runPurge(args []string, stdout, stderr io.Writer) error {
	var ff filterFlags
	return clientCommand("purge", "purge [flags] --state failed --ended-before 24h [--dry-run]", false, args, stdout,
		func(fs *flag.FlagSet) { ff.register(fs, true) },
		func(*flag.FlagSet) error {
			_, err := ff.filter([]string{"succeeded", "failed", "cancelled"})
			return err
		},
		func(fs *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			f, _ := ff.filter([]string{"succeeded", "failed", "cancelled"})
			return runBulk(stdout, cf, f, "purged", cl.PurgeWhere)
		})
}

// cancelWhere is cancel with a filter in place of a task id.
func cancelWhere(stdout io.Writer, cf *clientFlags, cl *client.Client, ff *filterFlags) error {
	f, _ := ff.filter(cancelStates)
	return runBulk(stdout, cf, f, "cancelled", cl.CancelWhere)
}

var cancelStates = []string{"waiting", "pending", "dispatched", "running", "retrying"}

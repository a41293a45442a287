package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/wire"
)

func runStatus(args []string, stdout, stderr io.Writer) error {
	var id uint64
	return clientCommand("status", "status [flags] TASK_ID", true, args, stdout, nil, taskIDArg(&id),
		func(fs *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			ctx, cancel := cf.ctx()
			defer cancel()
			st, err := cl.Query(ctx, id)
			if err != nil {
				return err
			}
			if cf.asJSON {
				return printJSON(stdout, st)
			}
			fmt.Fprintf(stdout, "task %d %s\n", st.ID, st.State)
			fmt.Fprintf(stdout, "type %s  attempt %d/%d  version %d\n", st.Type, st.Attempt, st.MaxAttempts, st.Version)
			if st.ExecutorID != "" {
				fmt.Fprintf(stdout, "executor %s\n", st.ExecutorID)
			}
			if st.Label != "" {
				fmt.Fprintf(stdout, "label %s\n", shown(st.Label))
			}
			printStep(stdout, st.Optional, st.When)
			if st.RunID != 0 {
				fmt.Fprintf(stdout, "run %d  step %s", st.RunID, shown(st.Step))
				if st.RollbackOf != 0 {
					fmt.Fprintf(stdout, "  compensates task %d", st.RollbackOf)
				}
				fmt.Fprintln(stdout)
			}
			fmt.Fprintf(stdout, "created %s  updated %s\ntrace_id %s\n",
				st.Created.UTC().Format(time.RFC3339Nano), st.Updated.UTC().Format(time.RFC3339Nano), st.TraceID)
			if st.Progress != nil {
				fmt.Fprintf(stdout, "progress %d%%", *st.Progress)
				if st.ProgressNote != "" {
					fmt.Fprintf(stdout, "  %s", shown(st.ProgressNote))
				}
				fmt.Fprintln(stdout)
			}
			if st.QueuedMs != nil {
				fmt.Fprintf(stdout, "queued %s", time.Duration(*st.QueuedMs)*time.Millisecond)
				if st.RunMs != nil {
					fmt.Fprintf(stdout, "  ran %s", time.Duration(*st.RunMs)*time.Millisecond)
				}
				fmt.Fprintln(stdout)
			}
			if st.Error != "" {
				fmt.Fprintf(stdout, "error: %s\n", shown(st.Error))
			}
			printRequeues(stdout, st.Requeues, st.RequeueReason)
			printOut(stdout, st.Out)
			return nil
		})
}

func runCancel(args []string, stdout, stderr io.Writer) error {
	var id uint64
	var ff filterFlags
	check := func(fs *flag.FlagSet) error {
		if !ff.set() {
			return taskIDArg(&id)(fs)
		}
		if _, err := ff.filter(cancelStates); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return fmt.Errorf("give a task id or a filter, not both")
		}
		return nil
	}
	return clientCommand("cancel", "cancel [flags] TASK_ID | cancel [flags] --type T [--state pending] [--dry-run]", true, args, stdout,
		func(fs *flag.FlagSet) { ff.register(fs, false) }, check,
		func(fs *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			if ff.set() {
				return cancelWhere(stdout, cf, cl, &ff)
			}
			ctx, cancel := cf.ctx()
			defer cancel()
			if err := cl.Cancel(ctx, id); err != nil {
				return err
			}
			if cf.asJSON {
				return printJSON(stdout, map[string]any{"task_id": id, "cancelled": true})
			}
			_, err := fmt.Fprintf(stdout, "task %d cancelled\n", id)
			return err
		})
}

func runList(args []string, stdout, stderr io.Writer) error {
	var state string
	var limit int
	var after uint64
	var all bool
	extra := func(fs *flag.FlagSet) {
		fs.StringVar(&state, "state", "", "task state: waiting, pending, dispatched, running, retrying, succeeded, failed or cancelled (required)")
		fs.IntVar(&limit, "limit", 100, "ids per page, 1 to 1000")
		fs.Var((*afterFlag)(&after), "after", "list ids after this task id (the previous page's next; 0: from the first)")
		fs.BoolVar(&all, "all", false, "follow next to the end (from --after), --limit ids a page, --request-timeout for each")
	}
	check := func(*flag.FlagSet) error {
		if state == "" {
			return fmt.Errorf("--state is required")
		}
		if !slices.Contains(taskStates, state) {
			return fmt.Errorf("--state %q: want one of %s", state, strings.Join(taskStates, ", "))
		}
		if limit < 1 || limit > 1000 {
			// The client leaves 0 out, which would get the default.
			return fmt.Errorf("--limit %d: want 1 to 1000", limit)
		}
		return nil
	}
	return clientCommand("list", "list --state S [flags]", false, args, stdout, extra, check,
		func(fs *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			var ids []uint64
			var next uint64
			var err error
			if all {
				ids, err = listAll(cf, cl, state, limit, after)
			} else {
				ctx, cancel := cf.ctx()
				defer cancel()
				ids, next, err = cl.List(ctx, state, limit, after)
			}
			if err != nil {
				return err
			}
			if cf.asJSON {
				if ids == nil {
					ids = []uint64{} // [], not null, whether --all or not
				}
				out := map[string]any{"state": state, "count": len(ids), "ids": ids}
				if next != 0 {
					out["next"] = next
				}
				return printJSON(stdout, out)
			}
			for _, id := range ids {
				fmt.Fprintln(stdout, id)
			}
			if next != 0 {
				fmt.Fprintf(stderr, "more: apollo11 list%s --state %s --limit %d --after %d\n", cf.targetArgs(fs), state, limit, next)
			}
			return nil
		})
}

// targetArgs is the part of a command line that reaches the same main
// control. It holds --addr when not the default, and the token and TLS
// files when set. So a hint copied from the output does not query the default address.
func (c *clientFlags) targetArgs(fs *flag.FlagSet) string {
	var b strings.Builder
	if f := fs.Lookup("addr"); f != nil && c.addr != f.DefValue {
		b.WriteString(" --addr " + shellWord(c.addr))
	}
	if c.tokenFile != "" {
		b.WriteString(" --token-file " + shellWord(c.tokenFile))
	}
	if c.adminTokenFile != "" {
		b.WriteString(" --admin-token-file " + shellWord(c.adminTokenFile))
	}
	for _, f := range []struct{ name, value string }{{"tls-ca", c.tls.ca}, {"tls-cert", c.tls.cert}, {"tls-key", c.tls.key}} {
		if f.value != "" {
			b.WriteString(" --" + f.name + " " + shellWord(f.value))
		}
	}
	return b.String()
}

// target is targetArgs of the command's own flags, for hints printed
// where the flag set is out of reach.
func (c *clientFlags) target() string {
	if c.fs == nil {
		return ""
	}
	return c.targetArgs(c.fs)
}

// shellWord quotes s for a POSIX shell when it holds anything but plain
// path and address characters. Brackets ([::1]:1969) are quoted too, as
// shells take them for a glob.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,/:@+=%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// listAll follows next from page to page. Each page is a request of its
// own, with its own --request-timeout. A large table takes many pages,
// and one timeout for the whole walk would fail on a loaded host.
func listAll(cf *clientFlags, cl *client.Client, state string, limit int, after uint64) ([]uint64, error) {
	return cl.ListWalk(state, limit, after, cf.ctx)
}

func runStats(args []string, stdout, stderr io.Writer) error {
	return clientCommand("stats", "stats [flags]", false, args, stdout, nil, nil,
		func(_ *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			ctx, cancel := cf.ctx()
			defer cancel()
			st, err := cl.Stats(ctx)
			if err != nil {
				return err
			}
			if cf.asJSON {
				return printJSON(stdout, statsJSON(st))
			}
			total := uint64(0)
			for _, n := range st.Tasks {
				total += n
			}
			fmt.Fprintf(stdout, "tasks %d:", total)
			for _, s := range taskStates {
				fmt.Fprintf(stdout, " %s=%d", s, st.Tasks[s])
			}
			fmt.Fprintf(stdout, "\nexecutors %d  state_version %d  uptime %s\n", st.Executors, st.StateVersion, st.Uptime.Round(time.Second))
			keys := slices.Sorted(maps.Keys(st.Extra))
			for _, k := range keys {
				fmt.Fprintf(stdout, "%s %s\n", k, shown(st.Extra[k]))
			}
			return nil
		})
}

// statsJSON is st as `stats --json` prints it. The keys the client does
// not name (extra) show as numbers and booleans where they are ones. So
// a script compares them without converting text.
func statsJSON(st client.Stats) map[string]any {
	extra := make(map[string]any, len(st.Extra))
	for k, v := range st.Extra {
		if n, ok := wire.ParseUint(v); ok {
			extra[k] = n
		} else if v == "true" || v == "false" {
			extra[k] = v == "true"
		} else {
			extra[k] = v
		}
	}
	return map[string]any{"tasks": st.Tasks, "executors": st.Executors, "state_version": st.StateVersion,
		"uptime_ns": st.Uptime, "extra": extra}
}

// taskStates are the states `list --state` takes, in the spec's order.
var taskStates = []string{"waiting", "pending", "dispatched", "running", "retrying", "succeeded", "failed", "cancelled"}

// runState prints the shared state, every key or the KEYs given. Keys not
// set are left out, as state_get reads them. So `state extra` prints only
// the state_version when no key "extra" is set.
func runState(args []string, stdout, stderr io.Writer) error {
	check := func(fs *flag.FlagSet) error {
		for _, k := range fs.Args() {
			if !wire.ValidKey(wire.PrefixState + k) {
				return fmt.Errorf("%q is not a state key (a-z 0-9 _ . -, one key per word)", k)
			}
		}
		return nil
	}
	return clientCommand("state", "state [flags] [KEY ...]  (no KEY: every key; a KEY not set is left out)", true, args, stdout, nil, check,
		func(fs *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			ctx, cancel := cf.ctx()
			defer cancel()
			vals, ver, err := cl.StateGet(ctx, fs.Args()...)
			if err != nil {
				return err
			}
			if cf.asJSON {
				return printJSON(stdout, map[string]any{"state_version": ver, "state": vals})
			}
			fmt.Fprintf(stdout, "state_version %d\n", ver)
			keys := slices.Sorted(maps.Keys(vals))
			for _, k := range keys {
				fmt.Fprintf(stdout, "%s=%s\n", k, shown(vals[k]))
			}
			return nil
		})
}

func runDebug(args []string, stdout, stderr io.Writer) error {
	check := func(fs *flag.FlagSet) error {
		if fs.NArg() != 1 || (fs.Arg(0) != "on" && fs.Arg(0) != "off") {
			return fmt.Errorf("want on or off")
		}
		return nil
	}
	return clientCommand("debug", "debug [flags] on|off", true, args, stdout, nil, check,
		func(fs *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			ctx, cancel := cf.ctx()
			defer cancel()
			if err := cl.Debug(ctx, fs.Arg(0) == "on"); err != nil {
				return err
			}
			if cf.asJSON {
				return printJSON(stdout, map[string]any{"debug": fs.Arg(0) == "on"})
			}
			_, err := fmt.Fprintf(stdout, "frame logging %s\n", fs.Arg(0))
			return err
		})
}

// printRequeues says how often a task was requeued, and why the last time
// when the requeue gave a reason.
func printRequeues(w io.Writer, n uint64, reason string) {
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "requeued %d times", n)
	if reason != "" {
		fmt.Fprintf(w, "; last reason: %s", shown(reason))
	}
	fmt.Fprintln(w)
}

// printStep shows the submit keys that change how dependencies act,
// optional=true and when=failed.
func printStep(w io.Writer, optional bool, when string) {
	switch {
	case optional && when != "":
		fmt.Fprintf(w, "optional, runs when a dependency %s\n", shown(when))
	case optional:
		fmt.Fprintln(w, "optional: its dependents run even if it fails")
	case when != "":
		fmt.Fprintf(w, "runs when a dependency %s\n", shown(when))
	}
}

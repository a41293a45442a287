package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/wire"
)

// runStates are the states `pipeline list --state` accepts (section 8.10).
var runStates = []string{"running", "succeeded", "failed", "cancelled", "compensating", "rolled_back", "rollback_failed"}

// runPipelineList is `pipeline list`: the runs the main control keeps,
// one line each, oldest first.
func runPipelineList(args []string, stdout, stderr io.Writer) error {
	var states string
	var limit int
	var after uint64
	extra := func(fs *flag.FlagSet) {
		fs.StringVar(&states, "state", "", "only runs in these states, comma-separated: "+strings.Join(runStates, ", ")+" (default: all)")
		fs.IntVar(&limit, "limit", 100, "runs per page, 1 to 1000")
		fs.Var((*afterFlag)(&after), "after", "list runs after this run id (the previous page's next; 0: from the first)")
	}
	var want []string
	check := func(*flag.FlagSet) error {
		if states != "" {
			want = strings.Split(states, ",")
		}
		for _, s := range want {
			if !slices.Contains(runStates, s) {
				return fmt.Errorf("--state %q: want one of %s", s, strings.Join(runStates, ", "))
			}
		}
		if limit < 1 || limit > 1000 {
			return fmt.Errorf("--limit %d: want 1 to 1000", limit)
		}
		return nil
	}
	return clientCommand("pipeline list", "pipeline list [--state S,...] [flags]", false, args, stdout, extra, check,
		func(fs *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			if err := needRuns(cl, cf); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			rctx, cancel := cf.ctxFrom(ctx)
			ids, next, err := cl.RunList(rctx, want, limit, after)
			cancel()
			if err != nil {
				return err
			}
			runs := make([]client.RunState, 0, len(ids))
			for _, id := range ids {
				rctx, cancel := cf.ctxFrom(ctx)
				rs, err := cl.RunQuery(rctx, client.RunRef{ID: id})
				cancel()
				if client.IsCode(err, wire.CodeUnknownRun) {
					continue // retention forgot it between the two requests
				}
				if err != nil {
					return err
				}
				runs = append(runs, rs)
			}
			if cf.asJSON {
				out := map[string]any{"count": len(runs), "runs": runs}
				if next != 0 {
					out["next"] = next
				}
				return printJSON(stdout, out)
			}
			for _, rs := range runs {
				fmt.Fprintf(stdout, "%d\t%s\t%s\t%s\n", rs.ID, rs.State, rs.Name, rs.Key)
			}
			if next != 0 {
				more := ""
				if states != "" {
					more = " --state " + states
				}
				fmt.Fprintf(stderr, "more: apollo11 pipeline list%s%s --limit %d --after %d\n", cf.targetArgs(fs), more, limit, next)
			}
			return nil
		})
}

// runPipelineCancel is `pipeline cancel RUN`: the run and each of its
// tasks not ended are cancelled.
func runPipelineCancel(args []string, stdout, stderr io.Writer) error {
	return runCommand("pipeline cancel", "pipeline cancel RUN [flags]", args, stdout, nil,
		func(ctx context.Context, cf *clientFlags, cl *client.Client, id uint64) error {
			rctx, cancel := cf.ctxFrom(ctx)
			n, err := cl.RunCancel(rctx, id)
			cancel()
			if err != nil {
				return fmt.Errorf("cancel run %d: %w", id, err)
			}
			if cf.asJSON {
				return printJSON(stdout, map[string]any{"run_id": id, "cancelled": n})
			}
			fmt.Fprintf(stdout, "run %d cancelled: %s cancelled\n", id, nTasks(uint64(n)))
			return nil
		})
}

// runCommand runs a command on one run, named by its one operand (an id
// or a key): it checks the main control keeps runs, resolves the run, and
// calls fn with a context that Ctrl-C cancels.
func runCommand(name, synopsis string, args []string, stdout io.Writer, extra func(fs *flag.FlagSet),
	fn func(ctx context.Context, cf *clientFlags, cl *client.Client, id uint64) error) error {
	check := func(fs *flag.FlagSet) error {
		if fs.NArg() != 1 {
			return fmt.Errorf("want one RUN (a run id or key), got %d", fs.NArg())
		}
		return nil
	}
	return clientCommand(name, synopsis, true, args, stdout, extra, check,
		func(fs *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			if err := needRuns(cl, cf); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			id, err := resolveRun(ctx, cl, cf, fs.Arg(0))
			if err != nil {
				return err
			}
			return fn(ctx, cf, cl, id)
		})
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/pipeline"
)

// scheduleUsage names the schedule subcommands.
const scheduleUsage = "Usage: apollo11 schedule add NAME --cron EXPR (--type T [--arg k=v ...] | --pipeline FILE [--var k=v ...]) [--jitter D] [--missed skip|catch-up] [--tz ZONE]\n" +
	"       apollo11 schedule list [NAME]\n" +
	"       apollo11 schedule pause|resume|delete NAME\n" +
	"Run apollo11 schedule add --help (or list --help, ...) for the flags."

// runSchedule dispatches the schedule subcommands (protocol section 8.12).
func runSchedule(args []string, stdout, stderr io.Writer) error {
	change := func(name string) func([]string) error {
		return func(args []string) error { return runScheduleChange(name, args, stdout) }
	}
	return runSubcommands("schedule", scheduleUsage, []subcommand{
		{"add", func(args []string) error { return runScheduleAdd(args, stdout) }},
		{"list", func(args []string) error { return runScheduleList(args, stdout) }},
		{"pause", change("pause")},
		{"resume", change("resume")},
		{"delete", change("delete")},
	}, args, stdout, stderr)
}

// scheduleName checks the one NAME operand.
func scheduleName(fs *flag.FlagSet) error {
	if fs.NArg() != 1 || fs.Arg(0) == "" {
		return fmt.Errorf("want exactly one schedule NAME")
	}
	return nil
}

func runScheduleAdd(args []string, stdout io.Writer) error {
	var (
		req      client.ScheduleRequest
		argsFlag = kvFlag{}
		vars     = kvFlag{}
		missed   string
		file     string
	)
	extra := func(fs *flag.FlagSet) {
		fs.StringVar(&req.Cron, "cron", "", `cron expression (required): five fields, six with seconds first, or @hourly, @daily ...`)
		fs.StringVar(&req.Zone, "tz", "", "IANA time zone the expression is read in (default UTC)")
		durationVar(fs, &req.Jitter, "jitter", 0, "delay each firing by up to this much, the same for a fire time on every run (below the gap between fire times)")
		fs.StringVar(&missed, "missed", "skip", "after downtime or a pause: skip (next future time) or catch-up (fire once for the latest missed time)")
		fs.StringVar(&req.Task.Type, "type", "", "task type each firing submits (required)")
		fs.Var(argsFlag, "arg", "task argument k=v, k of a-z 0-9 _ . - (repeat for more)")
		fs.IntVar(&req.Task.Priority, "priority", 0, "priority 0-9, 9 most urgent")
		fs.IntVar(&req.Task.MaxAttempts, "max-attempts", 0, "attempts before a fired task fails, at least 1 (default the type's policy, else 3)")
		durationVar(fs, &req.Task.Timeout, "timeout", 0, "time limit of each attempt, from its start (0: none)")
		fs.StringVar(&req.Task.Label, "label", "", "free text on each fired task, at most 256 bytes")
		fs.StringVar(&file, "pipeline", "", "pipeline file each firing submits as one run, instead of --type (a main control with runs); its key is not used")
		fs.Var(vars, "var", "with --pipeline: template variable k=v, replacing ${k} (repeat for more)")
	}
	check := func(fs *flag.FlagSet) error {
		if err := scheduleName(fs); err != nil {
			return err
		}
		if req.Cron == "" {
			return fmt.Errorf("--cron is required")
		}
		switch missed {
		case "skip":
		case "catch-up", "catch_up":
			req.CatchUp = true
		default:
			return fmt.Errorf("--missed %q: want skip or catch-up", missed)
		}
		if req.Jitter < 0 {
			return fmt.Errorf("--jitter %v: must not be negative", req.Jitter)
		}
		if req.Task.MaxAttempts < 1 && flagSet(fs, "max-attempts") {
			return fmt.Errorf("--max-attempts %d: must be at least 1", req.Task.MaxAttempts)
		}
		req.Name, req.Task.Args = fs.Arg(0), argsFlag
		if file == "" {
			if len(vars) > 0 {
				return fmt.Errorf("--var needs --pipeline")
			}
			return flagNames(req.Task.Validate())
		}
		if req.Task.Type != "" || len(argsFlag) > 0 {
			return fmt.Errorf("give --type (a task) or --pipeline (a run), not both")
		}
		run, err := scheduledRun(file, vars)
		if err != nil {
			return err
		}
		req.Run = run
		return nil
	}
	return clientCommand("schedule add", "schedule add NAME --cron EXPR --type T [--arg k=v ...] [flags]", true, args, stdout, extra, check,
		func(fs *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			ctx, cancel := cf.ctx()
			defer cancel()
			added, err := cl.ScheduleAdd(ctx, req)
			if err != nil {
				return err
			}
			if cf.asJSON {
				return printJSON(stdout, added)
			}
			what := "added"
			if added.Duplicate {
				what = "exists already, the same"
			}
			_, err = fmt.Fprintf(stdout, "schedule %s %s; next fire time %s\n", added.Name, what, added.NextFire.Format(time.RFC3339))
			return err
		})
}

// scheduledRun reads a pipeline file as the run a schedule submits. Its
// key is dropped, as each firing is keyed by its fire time.
func scheduledRun(path string, vars kvFlag) (*client.RunRequest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, exitError{Code: 1, Err: err}
	}
	defer f.Close()
	plan, err := pipeline.Parse(f, vars)
	if _, ok := errors.AsType[*pipeline.UnknownVarError](err); ok {
		return nil, fmt.Errorf("%s: %w", path, err) // a --var, not the file, is wrong
	}
	if err != nil {
		return nil, exitError{Code: 1, Err: fmt.Errorf("%s: %w", path, err)}
	}
	run, err := plan.RunRequest("")
	if err != nil {
		return nil, exitError{Code: 1, Err: fmt.Errorf("%s: %w", path, err)}
	}
	run.Key = ""
	return &run, nil
}

func runScheduleList(args []string, stdout io.Writer) error {
	check := func(fs *flag.FlagSet) error {
		if fs.NArg() > 1 {
			return fmt.Errorf("want at most one schedule NAME")
		}
		return nil
	}
	return clientCommand("schedule list", "schedule list [flags] [NAME]", true, args, stdout, nil, check,
		func(fs *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			ctx, cancel := cf.ctx()
			defer cancel()
			var list []client.Schedule
			if fs.NArg() == 1 {
				s, err := cl.ScheduleGet(ctx, fs.Arg(0))
				if err != nil {
					return err
				}
				list = []client.Schedule{s}
			} else {
				var err error
				if list, err = cl.ScheduleListAll(ctx); err != nil {
					return err
				}
			}
			if cf.asJSON {
				return printJSON(stdout, list)
			}
			return printSchedules(stdout, list)
		})
}

// printSchedules writes one line per schedule, in columns.
func printSchedules(w io.Writer, list []client.Schedule) error {
	if len(list) == 0 {
		_, err := fmt.Fprintln(w, "no schedules")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCRON\tTZ\tSTATE\tFIRES\tLAST FIRE\tNEXT FIRE\tJITTER\tMISSED\tTASK TYPE")
	when := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Format(time.RFC3339)
	}
	for _, s := range list {
		state := "active"
		if s.Paused {
			state = "paused"
		}
		body := shown(s.TaskType)
		if s.Run != "" {
			body = "run " + shown(s.Run)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", s.Name, shown(s.Cron), s.Zone, state, s.Fires,
			when(s.LastFire), when(s.NextFire), s.Jitter, s.Missed, body)
	}
	return tw.Flush()
}

func runScheduleChange(name string, args []string, stdout io.Writer) error {
	return clientCommand("schedule "+name, "schedule "+name+" [flags] NAME", true, args, stdout, nil, scheduleName,
		func(fs *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			ctx, cancel := cf.ctx()
			defer cancel()
			sched := fs.Arg(0)
			changed := true
			var err error
			switch name {
			case "pause":
				changed, err = cl.SchedulePause(ctx, sched)
			case "resume":
				changed, err = cl.ScheduleResume(ctx, sched)
			default:
				err = cl.ScheduleDelete(ctx, sched)
			}
			if err != nil {
				return err
			}
			done := map[string]string{"pause": "paused", "resume": "resumed", "delete": "deleted"}[name]
			if cf.asJSON {
				return printJSON(stdout, map[string]any{"name": sched, done: true, "changed": changed})
			}
			if !changed {
				_, err = fmt.Fprintf(stdout, "schedule %s was already %s\n", sched, map[string]string{"pause": "paused", "resume": "active"}[name])
				return err
			}
			_, err = fmt.Fprintf(stdout, "schedule %s %s\n", sched, done)
			return err
		})
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/pipeline"
	"github.com/apollo11/apollo11/wire"
)

func runPipeline(args []string, stdout, stderr io.Writer) error {
	const usage = "Usage: apollo11 pipeline run FILE [--var k=v ...] [--dry-run] [--wait] [--resume]\n" +
		"       apollo11 pipeline status [RUN | --run-file F]\n" +
		"       apollo11 pipeline resume RUN [--from STEP] [--wait]\n" +
		"       apollo11 pipeline list [--state S,...]\n" +
		"       apollo11 pipeline cancel RUN\n" +
		"RUN is a run id or a run's key. Run apollo11 pipeline run --help (or status, resume, list, cancel --help) for the flags."
	return runSubcommands("pipeline", usage, []subcommand{
		{"run", func(args []string) error { return runPipelineRun(args, stdout, stderr) }},
		{"status", func(args []string) error { return runPipelineStatus(args, stdout, stderr) }},
		{"resume", func(args []string) error { return runPipelineResume(args, stdout, stderr) }},
		{"list", func(args []string) error { return runPipelineList(args, stdout, stderr) }},
		{"cancel", func(args []string) error { return runPipelineCancel(args, stdout, stderr) }},
	}, args, stdout, stderr)
}

// defaultRunFile is where `pipeline run` records a run for `status`.
func defaultRunFile(name string) string { return name + ".run.json" }

func runPipelineRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("pipeline run", "pipeline run FILE [flags]", stdout)
	var cf clientFlags
	cf.register(fs)
	vars := kvFlag{}
	fs.Var(vars, "var", "template variable k=v, replacing ${k}; k must be in the file's vars or used in it (repeat for more)")
	dryRun := fs.Bool("dry-run", false, "check the file and print the plan; submit nothing")
	wait := fs.Bool("wait", false, "follow every step to its end; exit 0 if all succeeded, 1 otherwise, 4 if the wait ended first (the steps go on)")
	runFile := fs.String("run-file", "", "where to record the run for `pipeline status` (default <name>.run.json)")
	resume := fs.Bool("resume", false, "if the file's key names a run that ended failed or cancelled, resume it instead (needs the admin token when the main control has one)")
	if err := parseFlagsOperands(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return helpError(fs, fmt.Errorf("want one pipeline FILE, got %d", fs.NArg()))
	}
	if err := cf.check(); err != nil {
		return helpError(fs, err)
	}
	path := fs.Arg(0)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	plan, err := pipeline.Parse(f, vars)
	f.Close()
	if _, ok := errors.AsType[*pipeline.UnknownVarError](err); ok {
		return usageError(fmt.Errorf("%s: %w", path, err)) // a --var, not the file, is wrong
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if *dryRun {
		if cf.asJSON {
			if err := printJSON(stdout, planJSON(plan)); err != nil {
				return err
			}
			return checkDryRunArgs(&cf, plan, stderr)
		}
		plan.Describe(stdout)
		fmt.Fprintln(stdout, "dry run: nothing submitted")
		return checkDryRunArgs(&cf, plan, stderr)
	}
	if *resume && plan.Key == "" {
		return usageError(fmt.Errorf("%s: --resume needs the file's key: a run without one cannot be found again", path))
	}
	cl, err := cf.dial()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *runFile == "" {
		*runFile = defaultRunFile(plan.Name)
	}
	if cl.HasFeature(wire.FeatureRuns) {
		fits := plan.RunFits()
		if fits == nil || len(plan.RunOnly()) > 0 || *resume {
			return submitAsRun(ctx, cl, &cf, plan, runOptions{wait: *wait, resume: *resume, runFile: *runFile}, stdout, stderr)
		}
		fmt.Fprintf(stderr, "note: %v; submitting its steps one by one\n", fits)
	} else if *resume {
		return fmt.Errorf("--resume: %w", needRuns(cl, &cf))
	}
	// Each submit gets --request-timeout, as every client request does.
	// With none, a main control that never replied would hold the run.
	run, pw, err := pipeline.SubmitEach(cl, plan, *wait, func() (context.Context, context.CancelFunc) { return cf.ctxFrom(ctx) })
	if len(run.Steps) > 0 {
		// Recorded before the wait, so that `pipeline status` can follow
		// the run meanwhile, or after this process is gone.
		if werr := writeRunFile(*runFile, run); werr != nil {
			fmt.Fprintf(stderr, "warning: %v\n", werr)
		}
	}
	if err != nil {
		return cf.timedOut(err)
	}
	report := runReport{Name: plan.Name, RunFile: *runFile}
	if !*wait {
		for _, s := range run.Steps {
			report.Steps = append(report.Steps, stepReport{ID: s.ID, TaskID: s.TaskID})
		}
		if cf.asJSON {
			return printJSON(stdout, report)
		}
		for _, s := range run.Steps {
			fmt.Fprintf(stdout, "%-20s task %d\n", s.ID, s.TaskID)
		}
		fmt.Fprintf(stdout, "pipeline %s submitted: %d steps (follow with: apollo11 pipeline status --run-file %s%s)\n",
			plan.Name, len(run.Steps), shellWord(*runFile), cf.target())
		return nil
	}
	defer pw.Close()
	if !cf.asJSON {
		fmt.Fprintf(stderr, "pipeline %s submitted: %d steps; waiting for them to end\n", plan.Name, len(run.Steps))
	}
	werr := pw.Wait(ctx, func(s pipeline.RunStep, d client.Done) {
		if d.State != "succeeded" {
			report.Failed++
		}
		report.Steps = append(report.Steps, stepReport{ID: s.ID, TaskID: d.ID, State: d.State, Error: d.Error})
		if cf.asJSON {
			return
		}
		line := fmt.Sprintf("%-20s task %-8d %s", s.ID, d.ID, d.State)
		if d.Error != "" {
			line += "  (" + d.Error + ")"
		}
		fmt.Fprintln(stdout, line)
	})
	if cf.asJSON {
		if err := printJSON(stdout, report); err != nil {
			return err
		}
	}
	if werr != nil {
		return exitError{Code: exitUnknown, Err: fmt.Errorf("%w; the steps go on (follow with: apollo11 pipeline status --run-file %s%s)", werr, shellWord(*runFile), cf.target())}
	}
	if report.Failed > 0 {
		if !cf.asJSON {
			fmt.Fprintf(stdout, "pipeline %s: %d of %d steps did not succeed\n", plan.Name, report.Failed, len(run.Steps))
		}
		return exitError{Code: exitFailed}
	}
	if !cf.asJSON {
		fmt.Fprintf(stdout, "pipeline %s: all %d steps succeeded\n", plan.Name, len(run.Steps))
	}
	return nil
}

// runReport is what `pipeline run --json` prints. It lists the steps
// submitted, and with --wait how each ended, in the order they ended.
type runReport struct {
	Name    string       `json:"name"`
	RunFile string       `json:"run_file"`
	Steps   []stepReport `json:"steps"`
	Failed  int          `json:"failed,omitempty"`
}

type stepReport struct {
	ID     string `json:"id"`
	TaskID uint64 `json:"task_id"`
	State  string `json:"state,omitempty"`
	Error  string `json:"error,omitempty"`
}

// planJSON is the plan as `pipeline run --dry-run --json` prints it.
func planJSON(p *pipeline.Plan) any {
	type compensate struct {
		Type string            `json:"type"`
		Args map[string]string `json:"args,omitempty"`
	}
	type step struct {
		ID          string            `json:"id"`
		Type        string            `json:"type"`
		Args        map[string]string `json:"args,omitempty"`
		DependsOn   []string          `json:"depends_on,omitempty"`
		MaxAttempts int               `json:"max_attempts,omitempty"`
		Timeout     string            `json:"timeout,omitempty"`
		Delay       string            `json:"delay,omitempty"`
		Priority    int               `json:"priority,omitempty"`
		Key         string            `json:"key,omitempty"`
		Optional    bool              `json:"optional,omitempty"`
		When        string            `json:"when,omitempty"`
		Compensate  *compensate       `json:"compensate,omitempty"`
	}
	steps := make([]step, len(p.Steps))
	for i, s := range p.Steps {
		steps[i] = step{ID: s.ID, Type: s.Type, Args: s.Args, DependsOn: s.DependsOn, MaxAttempts: s.MaxAttempts,
			Priority: s.Priority, Key: s.Key, Optional: s.Optional, When: s.When}
		if c := s.Compensate; c != nil {
			steps[i].Compensate = &compensate{Type: c.Type, Args: c.Args}
		}
		if s.Timeout > 0 {
			steps[i].Timeout = s.Timeout.String()
		}
		if s.Delay > 0 {
			steps[i].Delay = s.Delay.String()
		}
	}
	return map[string]any{"name": p.Name, "dry_run": true, "longest_chain": p.Longest, "steps": steps}
}

func writeRunFile(path string, run *pipeline.Run) error {
	b, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("cannot record the run: %w", err)
	}
	return nil
}

func runPipelineStatus(args []string, stdout, stderr io.Writer) error {
	var runFile string
	var run pipeline.Run
	extra := func(fs *flag.FlagSet) {
		fs.StringVar(&runFile, "run-file", "", "the run recorded by `pipeline run` (default, without RUN: the only *.run.json here)")
	}
	// The run file is found and read before anything is dialled. With no
	// main control up, "cannot reach" would hide that there is no run.
	check := func(fs *flag.FlagSet) (err error) {
		switch {
		case fs.NArg() > 1:
			return fmt.Errorf("want at most one RUN, got %d", fs.NArg())
		case fs.NArg() == 1 && runFile != "":
			return fmt.Errorf("give RUN or --run-file, not both")
		case fs.NArg() == 1:
			return nil // the main control keeps the run
		}
		runFile, err = findRunFile(runFile)
		if err != nil {
			return err
		}
		if err := readRunFile(runFile, &run); err != nil {
			return exitError{Code: 1, Err: err} // not the command line's fault
		}
		return nil
	}
	return clientCommand("pipeline status", "pipeline status [RUN | --run-file F]", true, args, stdout, extra, check,
		func(fs *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			if fs.NArg() == 1 {
				return showRun(cl, cf, fs.Arg(0), stdout)
			}
			if run.RunID != 0 {
				return showRun(cl, cf, strconv.FormatUint(run.RunID, 10), stdout)
			}
			ctx, cancel := cf.ctx()
			defer cancel()
			states, err := pipeline.Status(ctx, cl, &run)
			if err != nil {
				return err
			}
			if cf.asJSON {
				return printJSON(stdout, map[string]any{"name": run.Name, "steps": run.Steps, "states": states})
			}
			fmt.Fprintf(stdout, "pipeline %s\n", run.Name)
			for i, s := range run.Steps {
				st := states[i]
				line := fmt.Sprintf("%-20s task %-8d %-10s attempt %d/%d", s.ID, s.TaskID, st.State, st.Attempt, st.MaxAttempts)
				if st.Error != "" {
					line += "  (" + st.Error + ")"
				}
				fmt.Fprintln(stdout, line)
			}
			return nil
		})
}

// findRunFile returns the run file to show. That is the one given, else
// the only *.run.json in the current directory.
func findRunFile(given string) (string, error) {
	if given != "" {
		return given, nil
	}
	matches, _ := filepath.Glob("*.run.json")
	switch len(matches) {
	case 0:
		return "", fmt.Errorf("give RUN or --run-file (no *.run.json file here)")
	case 1:
	default:
		// Named, so the one wanted can be given without an ls first.
		return "", fmt.Errorf("give RUN or --run-file: %d *.run.json files here (%s)", len(matches), strings.Join(matches, ", "))
	}
	return matches[0], nil
}

func readRunFile(path string, run *pipeline.Run) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, run); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

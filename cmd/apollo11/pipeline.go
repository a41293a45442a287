package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/pipeline"
)

func runPipeline(args []string, stdout, stderr io.Writer) error {
	const usage = "Usage: apollo11 pipeline run FILE [--var k=v ...] [--dry-run] [--wait]\n" +
		"       apollo11 pipeline status [--run-file F]\n" +
		"Run apollo11 pipeline run --help (or status --help) for the flags."
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return exitError{code: 2}
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	case "run":
		return runPipelineRun(args[1:], stdout, stderr)
	case "status":
		return runPipelineStatus(args[1:], stdout, stderr)
	}
	return fmt.Errorf("unknown pipeline command %q (run, status)", args[0])
}

// defaultRunFile is where `pipeline run` records a run for `status`.
func defaultRunFile(name string) string { return name + ".run.json" }

func runPipelineRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("pipeline run", "pipeline run FILE [flags]", stderr)
	var cf clientFlags
	cf.register(fs)
	vars := kvFlag{}
	fs.Var(vars, "var", "template variable k=v, replacing ${k} (repeat for more)")
	dryRun := fs.Bool("dry-run", false, "check the file and print the plan; submit nothing")
	wait := fs.Bool("wait", false, "follow every step to its end; exit 0 if all succeeded, 1 otherwise")
	runFile := fs.String("run-file", "", "where to record the run for `pipeline status` (default <name>.run.json)")
	if err := parseFlagsOperands(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("want one pipeline FILE")
	}
	path := fs.Arg(0)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	plan, err := pipeline.Parse(f, vars)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if *dryRun {
		plan.Describe(stdout)
		fmt.Fprintln(stdout, "dry run: nothing submitted")
		return nil
	}
	cl, err := cf.dial()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var onDone func(client.PipelineStep, client.Done)
	failed := 0
	if *wait {
		onDone = func(s client.PipelineStep, d client.Done) {
			if d.State != "succeeded" {
				failed++
			}
			line := fmt.Sprintf("%-20s task %-8d %s", s.ID, d.ID, d.State)
			if d.Error != "" {
				line += "  (" + d.Error + ")"
			}
			fmt.Fprintln(stdout, line)
		}
	}
	run, err := cl.RunPipeline(ctx, plan, onDone)
	if run != nil && len(run.Steps) > 0 {
		if *runFile == "" {
			*runFile = defaultRunFile(plan.Name)
		}
		if werr := writeRunFile(*runFile, run); werr != nil {
			fmt.Fprintf(stderr, "warning: %v\n", werr)
		}
	}
	if err != nil {
		return err
	}
	if !*wait {
		for _, s := range run.Steps {
			fmt.Fprintf(stdout, "%-20s task %d\n", s.ID, s.TaskID)
		}
		fmt.Fprintf(stdout, "pipeline %s submitted: %d steps (follow with: apollo11 pipeline status --run-file %s)\n",
			plan.Name, len(run.Steps), *runFile)
		return nil
	}
	if failed > 0 {
		fmt.Fprintf(stdout, "pipeline %s: %d of %d steps did not succeed\n", plan.Name, failed, len(run.Steps))
		return exitError{code: exitFailed}
	}
	fmt.Fprintf(stdout, "pipeline %s: all %d steps succeeded\n", plan.Name, len(run.Steps))
	return nil
}

func writeRunFile(path string, run *client.PipelineRun) error {
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
	extra := func(fs *flag.FlagSet) {
		fs.StringVar(&runFile, "run-file", "", "the run recorded by `pipeline run` (default: the only *.run.json here)")
	}
	return clientCommand("pipeline status", "pipeline status [--run-file F]", false, args, stderr, extra,
		func(_ *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			if runFile == "" {
				matches, _ := filepath.Glob("*.run.json")
				if len(matches) != 1 {
					return fmt.Errorf("give --run-file (found %d *.run.json files here)", len(matches))
				}
				runFile = matches[0]
			}
			b, err := os.ReadFile(runFile)
			if err != nil {
				return err
			}
			var run client.PipelineRun
			if err := json.Unmarshal(b, &run); err != nil {
				return fmt.Errorf("%s: %w", runFile, err)
			}
			ctx, cancel := cf.ctx()
			defer cancel()
			states, err := cl.PipelineStatus(ctx, &run)
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

// Command apollo11 is the one binary of apollo11. It is the main control,
// the executor daemon, the local dev system and the client commands.
//
//	apollo11 maincontrol [flags]   run the main control
//	apollo11 executor [flags]      run an executor
//	apollo11 dev                   a main control plus two local executors
//	apollo11 submit|status|cancel|list|stats|state|debug ...
//	apollo11 state [KEY ...]       the shared state, or only these keys
//	apollo11 inspect --data-dir DIR [TASK_ID]
//	apollo11 backup --data-dir DIR DEST
//
// Every flag can also be set with an APOLLO11_* environment variable
// (--max-frame is APOLLO11_MAX_FRAME). A flag on the command line wins.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apollo11/apollo11/executor/builtin"
	"github.com/apollo11/apollo11/internal/cli"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// command is one subcommand.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"maincontrol": {"run the main control (the state authority)", runMaincontrol},
		"version":     {"print the version", runVersion},
		"executor":    {"run an executor (the built-in task types)", runExecutor},
		"dev":         {"run a main control and two local executors: the quick start", runDev},
		"pipeline":    {"run a pipeline file (steps with dependencies), or show a run's steps", runPipeline},
		"inspect":     {"show a data dir offline: files, counts, one task's history", runInspect},
		"backup":      {"copy a data dir, live or stopped, into a new directory", runBackup},
		"submit":      {"submit a task (--wait: follow it to the end)", runSubmit},
		"status":      {"show one task", runStatus},
		"cancel":      {"cancel a task, or the tasks a filter matches", runCancel},
		"requeue":     {"put failed or cancelled tasks back to pending", runRequeue},
		"purge":       {"drop ended tasks before their retention runs out", runPurge},
		"list":        {"list task ids in one state", runList},
		"stats":       {"show the main control's counters", runStats},
		"state":       {"show the shared state: every key, or the KEYs given", runState},
		"debug":       {"turn the main control's frame logging on or off", runDebug},
		"pause":       {"stop dispatching one task type (submits still accepted)", runPause},
		"resume":      {"dispatch a paused task type again", runResume},
		"state-set":   {"set one shared-state key by hand (--if-version: compare and set)", runStateSet},
		"state-del":   {"delete one shared-state key by hand (--if-version: compare and set)", runStateDel},
		"types":       {"list the task types: pending, running, paused, executors, slots", runTypes},
		"schedule":    {"add, list, pause, resume or delete cron schedules that submit tasks", runSchedule},
		"cluster":     {"show a cluster's members, leader and lag; add or remove members; move the leadership", runCluster},
	}
}

func main() {
	builtin.GuardMain() // before anything: this binary also guards exec's programs
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	if args[0] == "help" && len(args) > 1 {
		// `help submit` is `submit --help`, and `help pipeline run` is
		// `pipeline run --help`.
		return run(append(slices.Clone(args[1:]), "--help"), stdout, stderr)
	}
	if args[0] == "help" || cli.IsHelpArg(args[0]) {
		usage(stdout)
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		// --version is what other tools take, so it is the version command too.
		args = append([]string{"version"}, args[1:]...)
	}
	cmd, ok := commands[args[0]]
	if args[0] == "bench" {
		// The harness left this binary, which runs on small hosts.
		fmt.Fprintf(stderr, "apollo11: the benchmark harness is its own command now: apollo11-bench %s\n(from the source tree: go run ./cmd/apollo11-bench)\n",
			strings.Join(args[1:], " "))
		return 2
	}
	if !ok {
		fmt.Fprintf(stderr, "apollo11: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	app.ForgetEnv() // run is called more than once in tests
	if args[0] != "version" {
		warnUnknownEnv(stderr, args[0], environ())
	}
	err := cmd.run(args[1:], stdout, stderr)
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ee):
	default:
		ee = exitError{Code: 1, Err: err}
	}
	if ee.Hint == "" {
		ee.Hint = adminTokenHint(ee.Err)
	}
	if ee.Hint == "" {
		ee.Hint = tokenHint(ee.Err)
	}
	if ee.Err != nil {
		if jsonMode(args[1:]) {
			printJSONErr(stderr, args[0], ee)
		} else {
			printErr(stderr, args[0], ee.Err, ee.Hint)
		}
	}
	return ee.Code
}

// printErr prints a command's error, prefixed with the command once. The
// client's errors start with the request's name, and "apollo11 cancel:
// cancel: ..." would say it twice. A daemon's stderr may be a pipe nobody
// reads, which is why its log goes through internal/logsink. So the exit
// waits at most sinkCloseTimeout for this line. The process then ends and
// its supervisor can start it again, rather than hang in the write. Each
// hint that is not empty gets a line of its own after the error.
func printErr(w io.Writer, cmd string, err error, hints ...string) {
	line := fmt.Sprintf("apollo11 %s: %s\n", cmd, nameEnvSources(strings.TrimPrefix(err.Error(), cmd+": ")))
	for _, h := range hints {
		if h != "" {
			line += h + "\n" // after the note nameEnvSources may add
		}
	}
	writeBounded(w, line)
}

// writeBounded writes line, waiting at most sinkCloseTimeout.
func writeBounded(w io.Writer, line string) {
	written := make(chan struct{})
	go func() {
		defer close(written)
		_, _ = io.WriteString(w, line)
	}()
	select {
	case <-written:
	case <-time.After(sinkCloseTimeout):
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "apollo11 (version %s): a small job server\n\nUsage: apollo11 <command> [flags]\n\nCommands:\n", version)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nRun apollo11 <command> --help (or apollo11 help <command>) for its flags.\nEvery flag can also be set with an APOLLO11_* environment variable\n(--max-frame: APOLLO11_MAX_FRAME).\n")
}

func runVersion(args []string, stdout, _ io.Writer) error {
	switch {
	case len(args) == 0:
	case cli.IsHelpArg(args[0]):
		fmt.Fprintln(stdout, "Usage: apollo11 version")
		return flag.ErrHelp
	default:
		return usageError(fmt.Errorf("unexpected argument %q: version takes none", args[0]))
	}
	fmt.Fprintf(stdout, "apollo11 %s\n", version)
	return nil
}

// Command apollo11-bench is the benchmark harness of apollo11: it loads
// a main control and reports throughput, latency and cost. It is its
// own binary so that the daemons do not carry it.
//
//	apollo11-bench [flags]            throughput and latency
//	apollo11-bench SCENARIO [flags]   wire, idle, pending, failover, flood, executor, stalls
//
// Every flag can also be set with an APOLLO11_BENCH_* environment
// variable (--rate is APOLLO11_BENCH_RATE); a flag on the command line
// wins.
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
	"syscall"

	"github.com/apollo11/apollo11/internal/cli"
)

// Bench flags read APOLLO11_BENCH_* variables, not APOLLO11_*: many of
// their names (addr, fsync, slots, token-file...) are also flags of the
// daemons and the client commands, and a variable set for those
// (APOLLO11_ADDR pointing at a production main control) must not steer
// a benchmark.
var app = &cli.Program{Name: "apollo11-bench", EnvPrefix: "APOLLO11_BENCH_"}

// scenarios are the subcommands; without one, the load runs.
var scenarios = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) error{
	"wire":     runWire,
	"idle":     runIdle,
	"pending":  runPending,
	"failover": runFailover,
	"flood":    runFlood,
	"executor": runExecutor,
	"stalls":   runStalls,
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app.ForgetEnv()
	if len(args) > 0 && args[0] == "help" {
		args = append(args[1:], "--help")
	}
	if len(args) > 0 && args[0] == "bench" {
		args = args[1:] // as `apollo11 bench ...` was typed
	}
	name, sub := "", runLoad
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name = args[0]
		var ok bool
		if sub, ok = scenarios[name]; !ok {
			fmt.Fprintf(stderr, "apollo11-bench: unknown scenario %q: want one of %s, or flags\n",
				name, strings.Join(slices.Sorted(maps.Keys(scenarios)), ", "))
			return 2
		}
		args = args[1:]
	}
	app.WarnUnknownEnv(stderr, name, os.Environ(), flagEnvVars, func(string) bool { return false })
	err := sub(ctx, args, stdout, stderr)
	prefix := strings.TrimSpace("apollo11-bench " + name)
	var ee cli.ExitError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ee):
		if ee.Err != nil {
			fmt.Fprintf(stderr, "%s: %s\n", prefix, app.NameEnvSources(ee.Err.Error(), noSetting))
			if ee.Hint != "" {
				fmt.Fprintln(stderr, ee.Hint)
			}
		}
		return ee.Code
	default:
		fmt.Fprintf(stderr, "%s: %s\n", prefix, app.NameEnvSources(err.Error(), noSetting))
		return 1
	}
}

// noSetting: the harness's errors name its flags only as --flag.
func noSetting(string) string { return "\x00" }

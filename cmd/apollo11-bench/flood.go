package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/apollo11/apollo11/bench"
	"github.com/apollo11/apollo11/internal/cli"
)

// runBenchFlood measures fairness between clients. It times a witness's
// round trips alone. Then it times them while other connections pipeline
// requests as fast as the main control answers them.
func runFlood(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := app.NewFlagSet("flood", `flood [--addr A] [flags]

Connections (--flooders) pipeline a cheap request (--request) as fast as
the main control answers it, while a witness connection sends the same
request one at a time and times each round trip: first alone (--alone),
then under the flood (--duration).`, stdout)
	var c commonBenchFlags
	// There is no --fsync or --dir. The requests never touch the disk,
	// and a started main control runs without a data dir.
	fs.StringVar(&c.addr, "addr", "", `main control to load (host:port); "" starts one as a child process`)
	fs.StringVar(&c.binary, "binary", "", "apollo11 binary to start the main control with (default: the one beside this binary, else on PATH)")
	fs.StringVar(&c.mcArgs, "maincontrol-args", "", "more flags for a started main control, space-separated")
	c.registerReport(fs)
	fs.StringVar(&c.tokenFile, "token-file", "", "shared token file: the connections prove it, and a started main control requires it (auth on)")
	var cfg bench.FloodConfig
	fs.IntVar(&cfg.PID, "pid", 0, "pid of the main control at --addr, to report its CPU and memory")
	fs.IntVar(&cfg.Flooders, "flooders", 16, "connections pipelining requests as fast as they are answered")
	fs.StringVar(&cfg.Request, "request", "stats", "what every connection sends: "+strings.Join(bench.FloodRequests, " or "))
	fs.IntVar(&cfg.Window, "window", 65_536, "most requests a flooder leaves unanswered")
	cli.DurationVar(fs, &cfg.Duration, "duration", 10*time.Second, "how long the flood lasts")
	cli.DurationVar(fs, &cfg.Alone, "alone", 2*time.Second, "how long the witness is measured alone, before the flood")
	cli.DurationVar(fs, &cfg.WitnessInterval, "witness-interval", 10*time.Millisecond, "pause between the witness's reply and its next request")
	procs := fs.Int("procs", 1, "GOMAXPROCS of the harness: 1 leaves the other cores to the main control; 0 is Go's default (one per CPU)")
	if err := app.Parse(fs, args); err != nil {
		return err
	}
	if err := setHarnessProcs(*procs); err != nil {
		return cli.UsageError(err)
	}
	if err := cli.FirstErr(cli.Positive("flooders", cfg.Flooders), cli.Positive("window", cfg.Window),
		cli.Positive("duration", cfg.Duration), cli.Positive("alone", cfg.Alone),
		cli.Positive("witness-interval", cfg.WitnessInterval)); err != nil {
		return cli.UsageError(err)
	}
	switch {
	case !slices.Contains(bench.FloodRequests, cfg.Request):
		return cli.UsageError(fmt.Errorf("--request %q: want %s", cfg.Request, strings.Join(bench.FloodRequests, " or ")))
	case c.addr != "" && c.mcArgs != "":
		return cli.UsageError(errors.New("--maincontrol-args sets up a main control the harness starts: drop it with --addr"))
	}
	cfg.Addr, cfg.Binary, cfg.TokenFile = c.addr, c.binary, c.tokenFile
	cfg.Args = strings.Fields(c.mcArgs)
	cfg.Progress = c.progressTo(stderr)
	rep, err := bench.RunFlood(ctx, cfg)
	if errors.Is(err, bench.ErrBadConfig) {
		return cli.UsageError(err) // --pid without --addr, or naming no process
	}
	if rep == nil {
		return err
	}
	// After an interrupt or a lost connection, the report of the part
	// that ran is shown, then the error.
	if perr := c.report(stdout, rep.WriteText, rep.WriteJSON); perr != nil {
		return perr
	}
	return err
}

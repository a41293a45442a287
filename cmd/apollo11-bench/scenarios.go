package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/bench"
	"github.com/apollo11/apollo11/internal/cli"
)

func runWire(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := app.NewFlagSet("wire", `wire [--addr A] [flags]

Sends valid and damaged wire-v1 frames, each on its own connection, and
checks the answers against the spec. The submit probes create tasks on the
peer (type bench-wire-probe, or another when a flipped bit changed it);
after the run it cancels every one whose submitted reply it read, and
reports the ids of any it could not cancel (exit 3). A submit whose reply
never came within --timeout cannot be cancelled by the harness.`, stdout)
	var c commonBenchFlags
	c.register(fs)
	var cfg bench.WireConfig
	fs.Float64Var(&cfg.Rate, "rate", 200, "probes per second")
	cli.DurationVar(fs, &cfg.Duration, "duration", 10*time.Second, "how long to probe")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "random seed: the same seed sends the same probes (0 picks one, printed in the report)")
	fs.IntVar(&cfg.Probe, "probe", -1, "run only this probe of the seed's sequence and show it (to reproduce a finding)")
	cli.DurationVar(fs, &cfg.Timeout, "timeout", 2*time.Second, "how long to wait for an answer")
	cli.DurationVar(fs, &cfg.Linger, "linger", 200*time.Millisecond, "how long to watch for a close after an answer")
	fs.IntVar(&cfg.Concurrency, "concurrency", 256, "probes in flight at most")
	fs.StringVar(&cfg.Cases, "cases", "", "only the probe cases whose name contains this")
	if err := app.Parse(fs, args); err != nil {
		return err
	}
	switch {
	case cfg.Rate <= 0:
		return cli.UsageError(fmt.Errorf("--rate %v: want probes per second, more than 0", cfg.Rate))
	case cfg.Concurrency < 1:
		return cli.UsageError(fmt.Errorf("--concurrency %d: want 1 or more", cfg.Concurrency))
	}
	if err := cli.FirstErr(cli.Positive("duration", cfg.Duration), cli.Positive("timeout", cfg.Timeout), cli.Positive("linger", cfg.Linger)); err != nil {
		return cli.UsageError(err)
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1 + uint64(time.Now().UnixNano()%1e6)
	}
	var err error
	if cfg.Token, err = c.token(); err != nil {
		return err
	}
	if c.addr != "" && (c.fsync != "off" || c.mcArgs != "") {
		return cli.UsageError(errors.New("--fsync and --maincontrol-args set up a main control the harness starts: drop them with --addr"))
	}
	cfg.Addr, cfg.Binary, cfg.Fsync, cfg.Args = c.addr, c.binary, c.fsync, strings.Fields(c.mcArgs)
	cfg.Progress = c.progressTo(stderr)
	rep, err := bench.RunWire(ctx, cfg)
	if rep == nil {
		return err
	}
	if perr := c.report(stdout, rep.WriteText, rep.WriteJSON); perr != nil {
		return perr
	}
	if err == nil && (rep.Unexpected > 0 || !rep.AliveAfter || rep.Crashed != "" || len(rep.TasksLeft) > 0 || rep.CleanupError != "") {
		return cli.ExitError{Code: 3}
	}
	return err
}

// runBenchStalls probes the host, not apollo11. It measures how long a
// thread that never blocks is kept off its CPU. That bounds every latency
// measured on the host.
func runStalls(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := app.NewFlagSet("stalls", "stalls [flags]", stdout)
	var c commonBenchFlags
	c.registerReport(fs)
	var cfg bench.StallsConfig
	cli.DurationVar(fs, &cfg.Duration, "duration", 10*time.Second, "how long to spin")
	cli.DurationVar(fs, &cfg.Threshold, "threshold", 50*time.Microsecond, "a longer gap between two clock reads counts as a stall")
	fs.IntVar(&cfg.Threads, "threads", runtime.NumCPU(), "spinning threads (one per CPU keeps every CPU busy)")
	if err := app.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.FirstErr(cli.Positive("threads", cfg.Threads), cli.Positive("threshold", cfg.Threshold),
		cli.Positive("duration", cfg.Duration)); err != nil {
		return cli.UsageError(err)
	}
	cfg.Progress = c.progressTo(stderr)
	rep, err := bench.RunStalls(ctx, cfg)
	if rep == nil {
		return err
	}
	// Interrupted (Ctrl-C), the partial report is shown, then the error.
	if perr := c.report(stdout, rep.WriteText, rep.WriteJSON); perr != nil {
		return perr
	}
	return err
}

func runIdle(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := app.NewFlagSet("idle", "idle [flags]", stdout)
	var c commonBenchFlags
	c.registerOwn(fs) // it starts its own main control, without a data dir: no --addr, no --fsync
	c.registerOwnToken(fs)
	var cfg bench.IdleConfig
	fs.IntVar(&cfg.Executors, "executors", 10_000, "idle executors to connect")
	cli.DurationVar(fs, &cfg.Hold, "hold", 10*time.Second, "how long they stay connected")
	fs.IntVar(&cfg.Dialers, "dialers", 100, "connections opened at once")
	if err := app.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.FirstErr(cli.Positive("executors", cfg.Executors), cli.Positive("dialers", cfg.Dialers),
		cli.Positive("hold", cfg.Hold)); err != nil {
		return cli.UsageError(err)
	}
	if c.addr != "" {
		return fmt.Errorf("bench idle starts its own main control, to read its memory: drop --addr")
	}
	cfg.Binary, cfg.Args, cfg.Progress = c.binary, strings.Fields(c.mcArgs), c.progressTo(stderr)
	cfg.TokenFile = c.tokenFile
	rep, err := bench.RunIdle(ctx, cfg)
	if rep == nil {
		return err
	}
	// Interrupted (Ctrl-C), the partial report is shown, then the error.
	if perr := c.report(stdout, rep.WriteText, rep.WriteJSON); perr != nil {
		return perr
	}
	return err
}

func runPending(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := app.NewFlagSet("pending", "pending [flags]", stdout)
	var c commonBenchFlags
	c.registerOwn(fs) // it starts and restarts its own main control: no --addr
	c.registerOwnToken(fs)
	fs.StringVar(&c.fsync, "fsync", "never", "the started main control's: never, batch or always (it restarts from disk)")
	var cfg bench.PendingConfig
	fs.Int64Var(&cfg.Tasks, "tasks", 1_000_000, "tasks to leave pending")
	fs.StringVar(&cfg.DataDir, "dir", "", "data dir for the main control (default: a temp dir, removed after)")
	fs.IntVar(&cfg.Producers, "producers", 4, "client connections submitting")
	fs.IntVar(&cfg.Payload, "payload", 16, "bytes of payload per task")
	if err := app.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.FirstErr(cli.Positive("tasks", int(cfg.Tasks)), cli.Positive("producers", cfg.Producers)); err != nil {
		return cli.UsageError(err)
	}
	if cfg.Payload < 0 {
		return cli.UsageError(fmt.Errorf("--payload %d: want 0 or more", cfg.Payload))
	}
	if c.addr != "" {
		return fmt.Errorf("bench pending starts and restarts its own main control: drop --addr")
	}
	cfg.Binary, cfg.Fsync, cfg.Args, cfg.Progress = c.binary, c.fsync, strings.Fields(c.mcArgs), c.progressTo(stderr)
	cfg.TokenFile = c.tokenFile
	rep, err := bench.RunPending(ctx, cfg)
	if err != nil {
		return err
	}
	return c.report(stdout, rep.WriteText, rep.WriteJSON)
}

func runFailover(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := app.NewFlagSet("failover", "failover [flags]", stdout)
	var c commonBenchFlags
	c.registerOwn(fs) // it starts its own main control, without a data dir: no --addr, no --fsync
	c.registerOwnToken(fs)
	var cfg bench.FailoverConfig
	cli.DurationVar(fs, &cfg.HeartbeatTimeout, "heartbeat-timeout", 2*time.Second, "the main control's --heartbeat-timeout")
	fs.IntVar(&cfg.Rounds, "rounds", 5, "rounds per variant")
	fs.StringVar(&cfg.Victim, "victim", "raw", "the executor killed: raw (apollo11-bench executor) or process (apollo11 executor)")
	if err := app.Parse(fs, args); err != nil {
		return err
	}
	if cfg.Victim != "raw" && cfg.Victim != "process" {
		return cli.UsageError(fmt.Errorf("--victim %q: want raw or process", cfg.Victim))
	}
	if err := cli.FirstErr(cli.Positive("rounds", cfg.Rounds), cli.Positive("heartbeat-timeout", cfg.HeartbeatTimeout)); err != nil {
		return cli.UsageError(err)
	}
	if c.addr != "" {
		return fmt.Errorf("bench failover starts its own main control with a short heartbeat timeout: drop --addr")
	}
	cfg.Binary, cfg.Args, cfg.Progress = c.binary, strings.Fields(c.mcArgs), c.progressTo(stderr)
	cfg.TokenFile = c.tokenFile
	rep, err := bench.RunFailover(ctx, cfg)
	if err != nil {
		return err
	}
	return c.report(stdout, rep.WriteText, rep.WriteJSON)
}

// runBenchExecutor is a raw-wire executor process. Bench failover kills
// it, and load runs use it as a light executor on another machine.
func runExecutor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := app.NewFlagSet("executor", "executor --connect A --id ID [flags]", stdout)
	var o bench.ExecutorOptions
	var types, mode, tokenFile string
	fs.StringVar(&o.Addr, "connect", "127.0.0.1:1969", "main control address")
	fs.StringVar(&o.ID, "id", "", "executor id")
	fs.StringVar(&types, "types", "echo", "task types served, comma-separated")
	fs.IntVar(&o.Slots, "slots", 1, "slots")
	fs.StringVar(&mode, "mode", "echo", "echo (answer at once), hold (start and keep running) or nostart (never start)")
	fs.StringVar(&tokenFile, "token-file", "", "shared token file, when the main control has auth on")
	if err := app.Parse(fs, args); err != nil {
		return err
	}
	if o.ID == "" {
		return fmt.Errorf("--id is required")
	}
	var err error
	if o.Mode, err = bench.ParseExecMode(mode); err != nil {
		return err
	}
	if tokenFile != "" {
		if o.Token, err = auth.LoadToken(tokenFile); err != nil {
			return err
		}
	}
	o.Types = strings.Split(types, ",")
	e, err := bench.DialExecutor(o)
	if err != nil {
		return err
	}
	return e.Run(ctx)
}

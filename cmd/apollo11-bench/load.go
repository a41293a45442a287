package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/bench"
	"github.com/apollo11/apollo11/internal/cli"
)

// setHarnessProcs sets the load harness's GOMAXPROCS (0: Go's default).
// One by default: the harness shares the host with the main control it
// loads, and with a P per CPU Go's scheduler keeps idle threads spinning
// for goroutines to run, which on a 2-core host takes the CPU the main
// control needs. At 50,000 tasks/s that alone put p90 submit -> dispatch
// at 2.4-2.9 ms against 1.1-1.4 with one; at 5,000/s, with CPU to spare,
// one proc is slower (bench/README.md). The started main control does
// not inherit it: GOMAXPROCS is set, not exported. bench flood, a load
// too, takes the same default; the other scenarios are probes at low
// rates or hold idle connections, and keep Go's default.
func setHarnessProcs(n int) error {
	if n < 0 {
		return fmt.Errorf("--procs %d: want 0 (Go's default) or more", n)
	}
	if n > 0 {
		runtime.GOMAXPROCS(n)
	}
	return nil
}

func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := app.NewFlagSet("", "[wire|idle|pending|failover|flood|stalls] [flags]", stdout)
	var c commonBenchFlags
	c.register(fs)
	var cfg bench.Config
	var rate, plot string
	fs.IntVar(&cfg.PID, "pid", 0, "pid of the main control at --addr, to report its CPU and memory")
	fs.StringVar(&cfg.DataDir, "dir", "", "data dir for a started main control with persistence (default: a temp dir, removed after)")
	fs.IntVar(&cfg.Producers, "producers", 4, "client connections submitting, each pipelining")
	fs.IntVar(&cfg.Executors, "executors", 8, "executors")
	fs.StringVar(&cfg.ExecutorMode, "executor-mode", "raw", "raw (in-process raw-wire executors) or process (apollo11 executor processes)")
	fs.IntVar(&cfg.Slots, "slots", 256, "slots per executor")
	fs.IntVar(&cfg.Payload, "payload", 16, "bytes of payload (arg.p) per task")
	fs.StringVar(&cfg.TaskType, "task-type", "echo", "task type submitted and served")
	fs.BoolVar(&cfg.Wait, "wait", true, "submit with wait=true and measure submit-to-done")
	fs.Int64Var(&cfg.Tasks, "tasks", 0, "tasks to submit (or give --duration)")
	cli.DurationVar(fs, &cfg.Duration, "duration", 0, "how long to submit (with --rate: tasks = rate x duration)")
	fs.StringVar(&rate, "rate", "", `open-loop target rate in tasks/s, or "50%" of the closed-loop peak measured first; "" is closed loop`)
	cli.DurationVar(fs, &cfg.PeakDuration, "peak-duration", 5*time.Second, "how long the peak is measured for a --rate in percent")
	fs.IntVar(&cfg.Window, "window", 1024, "closed loop: tasks in flight per producer")
	cli.DurationVar(fs, &cfg.PaceTick, "pace-tick", 0, "open loop: shortest sleep between a producer's writes (batches what falls due meanwhile)")
	cli.DurationVar(fs, &cfg.Drain, "drain", 30*time.Second, "how long to wait for the last tasks after the last submit")
	fs.StringVar(&plot, "plot", "", "draw latency percentiles and throughput over time to FILE.svg")
	procs := fs.Int("procs", 1, "GOMAXPROCS of the harness: 1 leaves the other cores to the main control; 0 is Go's default (one per CPU), for hosts where one core cannot drive it")
	if err := app.Parse(fs, args); err != nil {
		return err
	}
	if err := setHarnessProcs(*procs); err != nil {
		return cli.UsageError(err)
	}
	if err := cli.FirstErr(cli.Positive("producers", cfg.Producers), cli.Positive("slots", cfg.Slots),
		cli.Positive("window", cfg.Window)); err != nil {
		return cli.UsageError(err)
	}
	switch {
	case !slices.Contains([]string{"off", "never", "batch", "always"}, c.fsync):
		// Before the --addr check below: a value that is wrong anyway is
		// the first thing to say.
		return cli.UsageError(fmt.Errorf("fsync %q: want off, never, batch or always", c.fsync))
	case cfg.Executors < 0:
		return cli.UsageError(fmt.Errorf("--executors %d: want 0 (none) or more", cfg.Executors))
	case cfg.Tasks < 0:
		return cli.UsageError(fmt.Errorf("--tasks %d: want 1 or more", cfg.Tasks))
	case cfg.Tasks > 0 && cfg.Duration > 0:
		return cli.UsageError(fmt.Errorf("--tasks %d and --duration %v: give one of them (the run ends at whichever the other would ignore)", cfg.Tasks, cfg.Duration))
	case c.addr != "" && (c.fsync != "off" || cfg.DataDir != "" || c.mcArgs != ""):
		return cli.UsageError(errors.New("--fsync, --dir and --maincontrol-args set up a main control the harness starts: drop them with --addr"))
	}
	var err error
	if cfg.Rate, cfg.RateOfPeak, err = parseRate(rate); err != nil {
		return cli.UsageError(err)
	}
	if plot != "" {
		if err := bench.CheckPlotPath(plot); err != nil {
			return cli.UsageError(err)
		}
	}
	if cfg.Token, err = c.token(); err != nil {
		return err
	}
	if cfg.Executors == 0 {
		cfg.Executors = -1 // none: the library reads 0 as its default
	}
	cfg.Addr, cfg.Binary, cfg.Fsync = c.addr, c.binary, c.fsync
	cfg.MainControlArgs = strings.Fields(c.mcArgs)
	cfg.Progress = c.progressTo(stderr)
	rep, err := bench.Run(ctx, cfg)
	if errors.Is(err, bench.ErrBadConfig) {
		return cli.UsageError(err) // a bad value of a flag
	}
	if err != nil && rep == nil {
		return err
	}
	if perr := c.report(stdout, rep.WriteText, rep.WriteJSON); perr != nil {
		return perr
	}
	if plot != "" {
		if perr := bench.WritePlotFile(plot, rep); perr != nil {
			return perr
		}
		fmt.Fprintf(stderr, "plot written to %s\n", plot)
		if note := bench.ShortRunNote(rep); note != "" {
			fmt.Fprintf(stderr, "note: its throughput panel is empty: %s\n", note)
		}
	}
	return err
}

// parseRate reads --rate: tasks/s, or a percentage of the peak.
func parseRate(s string) (rate, ofPeak float64, err error) {
	if s == "" {
		return 0, 0, nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f <= 0 || f > 100 {
			return 0, 0, fmt.Errorf("--rate %q: want a percentage in (0, 100]", s)
		}
		return 0, f / 100, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 {
		return 0, 0, fmt.Errorf("--rate %q: want tasks per second or a percentage of the peak", s)
	}
	return f, 0, nil
}

func runWire(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := app.NewFlagSet("wire", `wire wire [--addr A] [flags]

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

// runBenchStalls probes the host, not apollo11: how long a thread that
// never blocks is kept off its CPU, which bounds every latency measured
// on that host.
func runStalls(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := app.NewFlagSet("stalls", "stalls stalls [flags]", stdout)
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
	fs := app.NewFlagSet("idle", "idle idle [flags]", stdout)
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
	fs := app.NewFlagSet("pending", "pending pending [flags]", stdout)
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
	fs := app.NewFlagSet("failover", "failover failover [flags]", stdout)
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

// runBenchExecutor is a raw-wire executor process: what bench failover
// kills, and a light executor for load runs on another machine.
func runExecutor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := app.NewFlagSet("executor", "executor executor --connect A --id ID [flags]", stdout)
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

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

	"github.com/apollo11/apollo11/bench"
	"github.com/apollo11/apollo11/internal/cli"
	"github.com/apollo11/apollo11/internal/tlsfiles"
)

// setHarnessProcs sets the load harness's GOMAXPROCS, with 0 for Go's
// default. The default here is one. The harness shares the host with the
// main control it loads. With a P per CPU, Go's scheduler keeps idle
// threads spinning, which on a 2-core host takes the main control's CPU.
// bench/README.md has the figures. The started main control does not
// inherit the setting, which is set, not exported. bench flood is a load
// too and takes the same default. The other scenarios are probes at low
// rates or hold idle connections. They keep Go's default.
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
	var tlsFiles tlsfiles.Files
	fs.StringVar(&tlsFiles.CA, "tls-ca", "", "CA bundle (PEM) that verifies the main control's TLS certificate: the run's connections use TLS (a started one needs --tls-cert in --maincontrol-args)")
	fs.StringVar(&tlsFiles.Cert, "tls-cert", "", "client certificate (PEM) of the run's connections, for a main control with --tls-client-ca")
	fs.StringVar(&tlsFiles.Key, "tls-key", "", "private key (PEM) of --tls-cert")
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
		// This comes before the --addr check below. A value that is wrong
		// anyway is the first thing to say.
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
	if !tlsFiles.Empty() {
		l, err := tlsfiles.Load(tlsFiles, nil)
		if err != nil {
			return err
		}
		cfg.TLS = l.ClientConfig("")
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

// parseRate reads --rate, in tasks/s or as a percentage of the peak.
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

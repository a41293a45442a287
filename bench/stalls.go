package bench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"time"
)

// StallsConfig is the host probe.
// It finds how often, and for how long, a thread that never blocks is kept off its CPU.
// Latency targets in the milliseconds need such stalls rarer than the percentile asked for.
// On a shared VM they often are not.
// No server can answer faster than the CPU it runs on is given to it.
type StallsConfig struct {
	Duration  time.Duration // default (0) 10 s
	Threshold time.Duration // a longer gap between two clock reads is a stall (default 50 µs)
	Threads   int           // spinning threads (default: one per CPU)
	Progress  io.Writer
}

// StallsReport is what each spinning thread saw.
type StallsReport struct {
	DurationS   float64       `json:"duration_s"`
	ThresholdUs float64       `json:"threshold_us"`
	Threads     []StallThread `json:"threads"`
	// OtherShare is the share of the machine's CPU that other processes used meanwhile.
	// Stalls on a busy machine are mostly its other load.
	OtherShare float64 `json:"other_share"`
	// Interrupted is set when the run was cut short (Ctrl-C).
	// The report then covers DurationS, the part that ran.
	Interrupted bool `json:"interrupted,omitempty"`
}

// StallThread summarizes one thread's stalls.
type StallThread struct {
	Stalls     int       `json:"stalls"`
	OverMs     int       `json:"over_1ms"`
	StalledPct float64   `json:"stalled_pct"` // share of the run spent in stalls
	MaxMs      float64   `json:"max_ms"`
	TopMs      []float64 `json:"top_ms"` // the longest stalls, longest first
	// Residual gives, for each bound, a share of instants.
	// At those instants the thread was inside a stall with more than that bound still to go.
	// That is the chance that work arriving at a random moment waits that long for this CPU.
	// It counts before any queueing of its own.
	Residual []ResidualShare `json:"residual"`
}

// ResidualShare is one bound of StallThread.Residual.
type ResidualShare struct {
	BoundMs float64 `json:"bound_ms"`
	Pct     float64 `json:"pct"`
}

// residualBounds are the waits the report gives the odds of.
var residualBounds = []time.Duration{500 * time.Microsecond, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond}

// RunStalls spins cfg.Threads threads, each locked to its own OS thread.
// Each reads the monotonic clock in a tight loop for cfg.Duration.
// It reports every gap between two reads longer than cfg.Threshold.
// Run it on an otherwise idle machine, because it keeps every CPU busy.
func RunStalls(ctx context.Context, cfg StallsConfig) (*StallsReport, error) {
	if cfg.Duration < 0 || cfg.Threshold < 0 || cfg.Threads < 0 {
		return nil, fmt.Errorf("%w: negative duration, threshold or thread count", ErrBadConfig)
	}
	if cfg.Duration == 0 {
		cfg.Duration = 10 * time.Second
	}
	if cfg.Threshold == 0 {
		cfg.Threshold = 50 * time.Microsecond
	}
	if cfg.Threads == 0 {
		cfg.Threads = runtime.NumCPU()
	}
	if cfg.Threads > runtime.GOMAXPROCS(0) {
		return nil, fmt.Errorf("%d threads need GOMAXPROCS >= %d (it is %d)", cfg.Threads, cfg.Threads, runtime.GOMAXPROCS(0))
	}
	if cfg.Progress != nil {
		fmt.Fprintf(cfg.Progress, "spinning %d threads for %v...\n", cfg.Threads, cfg.Duration)
	}
	busy0, total0, merr := MachineCPU()
	self0 := SelfCPU()
	start := time.Now()
	gaps := make([][]time.Duration, cfg.Threads)
	var wg sync.WaitGroup
	for i := range gaps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gaps[i] = spin(ctx, cfg.Duration, cfg.Threshold)
		}()
	}
	wg.Wait()
	// Cut short, the report covers what ran.
	// It holds the stalls seen so far over the time spun so far.
	// It is returned with the context's error.
	span := max(min(time.Since(start), cfg.Duration), time.Microsecond) // never 0: it divides
	rep := &StallsReport{DurationS: span.Seconds(), ThresholdUs: float64(cfg.Threshold) / 1e3, Interrupted: ctx.Err() != nil}
	for _, g := range gaps {
		rep.Threads = append(rep.Threads, summarizeStalls(g, span))
	}
	if busy1, total1, err := MachineCPU(); merr == nil && err == nil && total1 > total0 {
		other := (busy1 - busy0 - (SelfCPU() - self0)).Seconds() / (total1 - total0).Seconds()
		rep.OtherShare = max(other, 0)
	}
	return rep, ctx.Err()
}

// spin reads the clock until d has passed and returns the gaps longer than threshold.
// Nothing in the loop blocks or allocates, but the rare append.
// So a gap is time the thread was not running.
// The hypervisor took the CPU, an interrupt ran, or another thread was scheduled.
func spin(ctx context.Context, d, threshold time.Duration) []time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	gaps := make([]time.Duration, 0, 4096)
	start := time.Now()
	last := time.Duration(0)
	for n := 0; ; n++ {
		now := time.Since(start)
		// Only the part of a gap inside the run counts, so the stalls
		// never add up to more than the run.
		if g := min(now, d) - last; g > threshold {
			gaps = append(gaps, g)
		}
		last = now
		if now >= d {
			return gaps
		}
		if n&0xffff == 0 && ctx.Err() != nil {
			return gaps
		}
	}
}

// summarizeStalls turns one thread's gaps over a run of length span into its summary.
func summarizeStalls(gaps []time.Duration, span time.Duration) StallThread {
	sorted := slices.Clone(gaps)
	slices.SortFunc(sorted, func(a, b time.Duration) int { return int(b - a) })
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	pct := func(d time.Duration) float64 { return 100 * d.Seconds() / span.Seconds() }
	st := StallThread{Stalls: len(sorted)}
	var sum time.Duration
	for _, g := range sorted {
		sum += g
		if g > time.Millisecond {
			st.OverMs++
		}
	}
	st.StalledPct = pct(sum)
	if len(sorted) > 0 {
		st.MaxMs = ms(sorted[0])
	}
	for _, g := range sorted[:min(len(sorted), 8)] {
		st.TopMs = append(st.TopMs, ms(g))
	}
	for _, b := range residualBounds {
		var left time.Duration
		for _, g := range sorted {
			if g <= b {
				break // sorted longest first
			}
			left += g - b
		}
		st.Residual = append(st.Residual, ResidualShare{BoundMs: ms(b), Pct: pct(left)})
	}
	return st
}

// WriteJSON writes the report as indented JSON.
func (r *StallsReport) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteText writes the report for people.
func (r *StallsReport) WriteText(w io.Writer) error {
	var b []byte
	b = fmt.Appendf(b, "apollo11-bench stalls: %d threads spinning for %.1f s; a gap over %.0f µs between clock reads is a stall\n",
		len(r.Threads), r.DurationS, r.ThresholdUs)
	if r.Interrupted {
		b = append(b, "  INTERRUPTED: the figures cover the part that ran\n"...)
	}
	b = fmt.Appendf(b, "  %-7s %8s %8s %9s %9s", "thread", "stalls", ">1 ms", "stalled", "max ms")
	for _, bound := range residualBounds {
		b = fmt.Appendf(b, " %9s", fmt.Sprintf("P(>%gms)", float64(bound)/1e6))
	}
	b = append(b, "  longest (ms)\n"...)
	for i, t := range r.Threads {
		b = fmt.Appendf(b, "  %-7d %8d %8d %8.2f%% %9.2f", i, t.Stalls, t.OverMs, t.StalledPct, t.MaxMs)
		for _, res := range t.Residual {
			b = fmt.Appendf(b, " %8.3f%%", res.Pct)
		}
		b = append(b, ' ', ' ')
		for j, ms := range t.TopMs {
			if j > 0 {
				b = append(b, ' ')
			}
			b = fmt.Appendf(b, "%.2f", ms)
		}
		b = append(b, '\n')
	}
	b = fmt.Appendf(b, "  P(>x): share of instants inside a stall with more than x still to go\n")
	b = fmt.Appendf(b, "  other processes used %.0f%% of the machine meanwhile", 100*r.OtherShare)
	if r.OtherShare > 0.1 {
		b = append(b, " (WARNING: the stalls are mostly that load)"...)
	}
	b = append(b, '\n')
	_, err := w.Write(b)
	return err
}

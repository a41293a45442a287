package bench

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// IdleConfig is scenario 3.
// Many executors are connected, doing nothing but heartbeats.
// The harness starts the main control so that it can read its memory.
type IdleConfig struct {
	Binary    string
	Executors int           // default 10,000
	Hold      time.Duration // how long they stay connected, idle (default 10 s)
	Dialers   int           // connections opened at once (default 100)
	TokenFile string        // shared token: the main control requires it (auth on); "" is auth off
	Args      []string      // more maincontrol flags
	Progress  io.Writer
}

// IdleReport is what the idle executors cost the main control.
type IdleReport struct {
	Executors    int     `json:"executors"`
	Registered   int     `json:"registered"`
	ConnectS     float64 `json:"connect_s"`
	FileLimit    uint64  `json:"file_limit"`
	HeartbeatMs  int64   `json:"heartbeat_ms"`
	RSSBefore    int64   `json:"rss_before_bytes"`
	RSSAfter     int64   `json:"rss_after_bytes"`
	PeakRSS      int64   `json:"peak_rss_bytes"`
	BytesPerConn float64 `json:"bytes_per_connection"`
	// IdleCoreShare is the main control's CPU over the hold, as a share of one core.
	// It is the cost of the heartbeats alone.
	IdleCoreShare    float64 `json:"idle_core_share"`
	HarnessCoreShare float64 `json:"harness_core_share"`
	HoldS            float64 `json:"hold_s"`
	// Interrupted is set when the hold was cut short (Ctrl-C).
	// The CPU figures then cover HoldS, the part that ran.
	Interrupted bool `json:"interrupted,omitempty"`
	// InterruptedConnecting is set when Ctrl-C came before every executor had registered.
	// The memory figures are then for the Registered ones, and there was no hold.
	InterruptedConnecting bool `json:"interrupted_connecting,omitempty"`
}

// RunIdle connects cfg.Executors raw executors to a main control it
// starts, keeps them idle for cfg.Hold and reports the memory each costs.
func RunIdle(ctx context.Context, cfg IdleConfig) (*IdleReport, error) {
	if cfg.Executors <= 0 {
		cfg.Executors = 10_000
	}
	if cfg.Hold <= 0 {
		cfg.Hold = 10 * time.Second
	}
	if cfg.Dialers <= 0 {
		cfg.Dialers = 100
	}
	limit, err := RaiseFileLimit()
	if err != nil {
		return nil, err
	}
	if need := uint64(cfg.Executors) + 100; limit < need {
		return nil, fmt.Errorf("open-file limit %d is below the %d needed: raise it (ulimit -n)", limit, need)
	}
	token, tokenArgs, err := loadTokenFile(cfg.TokenFile)
	if err != nil {
		return nil, err
	}
	args := append(append([]string{"--max-conns", strconv.Itoa(cfg.Executors + 100)}, tokenArgs...), cfg.Args...)
	mc, err := StartMainControl(ctx, MainControlOptions{Binary: cfg.Binary, Args: args})
	if err != nil {
		return nil, err
	}
	defer mc.Close()
	rep := &IdleReport{Executors: cfg.Executors, FileLimit: limit}
	time.Sleep(500 * time.Millisecond) // let the fresh process settle
	if rep.RSSBefore, _, err = ProcMem(mc.PID()); err != nil {
		return nil, err
	}
	execs, took, err := dialIdle(ctx, mc.Addr, cfg, token)
	rep.ConnectS = took.Seconds()
	ectx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		for _, e := range execs {
			_ = e.Close()
		}
		wg.Wait()
	}()
	if err != nil && (ctx.Err() == nil || len(execs) == 0) {
		return nil, err
	}
	rep.Registered = len(execs)
	rep.HeartbeatMs = execs[0].Heartbeat().Milliseconds()
	if err != nil {
		// Ctrl-C came while connecting.
		// What those registered so far cost is still worth a report.
		rep.Interrupted, rep.InterruptedConnecting = true, true
		if rep.RSSAfter, rep.PeakRSS, err = ProcMem(mc.PID()); err != nil {
			return nil, err
		}
		rep.BytesPerConn = float64(rep.RSSAfter-rep.RSSBefore) / float64(len(execs))
		return rep, ctx.Err()
	}
	for _, e := range execs {
		wg.Add(1)
		go func() { defer wg.Done(); _ = e.Run(ectx) }()
	}
	cpu0, _ := ProcCPU(mc.PID())
	self0 := SelfCPU()
	holdStart := time.Now()
	bar := newProgress(cfg.Progress, "idle ", 0, cfg.Hold, holdStart)
	for time.Since(holdStart) < cfg.Hold && ctx.Err() == nil {
		bar.update(int64(len(execs)), int64(len(execs)))
		time.Sleep(100 * time.Millisecond)
	}
	bar.finish()
	// Cut short during the hold, the report covers the part held.
	// It is returned with the context's error. The memory is the same.
	rep.Interrupted = ctx.Err() != nil
	hold := time.Since(holdStart)
	cpu1, _ := ProcCPU(mc.PID())
	rep.HarnessCoreShare = (SelfCPU() - self0).Seconds() / hold.Seconds()
	rep.HoldS = hold.Seconds()
	rep.IdleCoreShare = (cpu1 - cpu0).Seconds() / hold.Seconds()
	if rep.RSSAfter, rep.PeakRSS, err = ProcMem(mc.PID()); err != nil {
		return nil, err
	}
	rep.BytesPerConn = float64(rep.RSSAfter-rep.RSSBefore) / float64(len(execs))
	return rep, ctx.Err()
}

// dialIdle registers n executors, a few at a time.
// When ctx interrupts it, it returns those registered so far with ctx's error.
// On any other error it closes them.
func dialIdle(ctx context.Context, addr string, cfg IdleConfig, token []byte) ([]*RawExecutor, time.Duration, error) {
	start := time.Now()
	execs := make([]*RawExecutor, cfg.Executors)
	var next atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	bar := newProgress(cfg.Progress, "connect ", int64(cfg.Executors), 0, start)
	var done atomic.Int64
	for range cfg.Dialers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= cfg.Executors {
					return
				}
				e, err := DialExecutor(ExecutorOptions{Addr: addr, ID: fmt.Sprintf("idle-%d", i),
					Types: []string{"bench-idle"}, Slots: 1, BufSize: 1024, Timeout: 30 * time.Second, Token: token})
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				if err != nil {
					return
				}
				execs[i] = e
				done.Add(1)
			}
		}()
	}
	stopBar := make(chan struct{})
	go func() {
		for {
			select {
			case <-stopBar:
				return
			case <-time.After(100 * time.Millisecond):
				bar.update(done.Load(), done.Load())
			}
		}
	}()
	wg.Wait()
	close(stopBar)
	bar.finish()
	var out []*RawExecutor
	for _, e := range execs {
		if e != nil {
			out = append(out, e)
		}
	}
	if firstErr == nil && ctx.Err() != nil {
		return out, time.Since(start), fmt.Errorf("%d of %d executors registered: %w", len(out), cfg.Executors, ctx.Err())
	}
	if firstErr != nil {
		for _, e := range out {
			_ = e.Close()
		}
		return nil, time.Since(start), fmt.Errorf("%d of %d executors registered: %w", len(out), cfg.Executors, firstErr)
	}
	return out, time.Since(start), nil
}

// WriteJSON writes the report as indented JSON.
func (r *IdleReport) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteText writes the report for people.
func (r *IdleReport) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, `apollo11-bench idle: %s executors connected and idle
  connect     %.1f s (open-file limit %d)
  heartbeat   every %d ms
  rss         %s before, %s with them connected (peak %s)
  per conn    %s bytes
  idle cpu    main control %.1f%% of one core over %.1f s of heartbeats; harness %.1f%%
`, group(float64(r.Registered)), r.ConnectS, r.FileLimit, r.HeartbeatMs, mib(r.RSSBefore), mib(r.RSSAfter), mib(r.PeakRSS),
		group(r.BytesPerConn), 100*r.IdleCoreShare, r.HoldS, 100*r.HarnessCoreShare)
	switch {
	case err != nil:
	case r.InterruptedConnecting:
		_, err = fmt.Fprintf(w, "  INTERRUPTED while connecting: %s of %s executors registered; the memory figures are for them, and there was no hold\n",
			group(float64(r.Registered)), group(float64(r.Executors)))
	case r.Interrupted:
		_, err = fmt.Fprintf(w, "  INTERRUPTED: the hold was cut short; the cpu figures cover the %.1f s held\n", r.HoldS)
	}
	return err
}

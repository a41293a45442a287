package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// FloodRequests are the requests bench flood can send.
// They are cheap, a client may send them after hello, and they change nothing.
// So a run leaves no trace on a main control it is aimed at.
var FloodRequests = []string{"stats", "state_get"}

// FloodConfig is the fairness scenario.
// Many client connections pipeline a cheap request as fast as the main control takes it.
// Meanwhile one well-behaved client, the witness, sends the same request one at a time.
// It times each round trip, first alone, then under the flood.
type FloodConfig struct {
	// Addr is a main control to load.
	// "" starts one as a child process with no data dir.
	// That lets the report include its CPU and memory.
	Addr string
	// PID is the process id of the main control at Addr, if known.
	// It gives its CPU and memory. 0 leaves them out.
	PID int
	// TokenFile is a shared token file.
	// The connections prove it to the main control at Addr.
	// A main control the harness starts requires it.
	TokenFile string
	Binary    string   // for a started main control; "" is DefaultBinary
	Args      []string // more flags for a started main control

	Flooders int    // flooding connections (default 16)
	Request  string // one of FloodRequests (default stats)
	// Window is the most requests a flooder leaves unanswered (default 65,536).
	// That is enough that its socket, not the window, holds it back.
	Window          int
	Duration        time.Duration // of the flood (default 10 s)
	Alone           time.Duration // the witness alone, before (default 2 s)
	WitnessInterval time.Duration // pause between witness round trips (default 10 ms)

	Progress io.Writer // progress bar destination, or nil for none
}

// withDefaults fills zero values and refuses the rest of what cannot be meant.
// The command line refuses zeros before they get here.
func (c FloodConfig) withDefaults() (FloodConfig, error) {
	if c.Flooders == 0 {
		c.Flooders = 16
	}
	if c.Request == "" {
		c.Request = "stats"
	}
	if c.Window == 0 {
		c.Window = 65_536
	}
	if c.Duration == 0 {
		c.Duration = 10 * time.Second
	}
	if c.Alone == 0 {
		c.Alone = 2 * time.Second
	}
	if c.WitnessInterval == 0 {
		c.WitnessInterval = 10 * time.Millisecond
	}
	switch {
	case c.Flooders < 0 || c.Window < 0 || c.Duration < 0 || c.Alone < 0 || c.WitnessInterval < 0:
		return c, fmt.Errorf("%w: negative flooders, window, duration, alone or witness interval", ErrBadConfig)
	case !slices.Contains(FloodRequests, c.Request):
		return c, fmt.Errorf("%w: request %q: want one of %v", ErrBadConfig, c.Request, FloodRequests)
	case c.PID < 0:
		return c, fmt.Errorf("%w: --pid %d: want a process id", ErrBadConfig, c.PID)
	case c.PID > 0 && c.Addr == "":
		return c, fmt.Errorf("%w: --pid is for a main control at --addr; the harness knows the pid of one it starts", ErrBadConfig)
	case c.Addr != "" && len(c.Args) > 0:
		return c, fmt.Errorf("%w: --maincontrol-args set up a main control the harness starts: drop them with --addr", ErrBadConfig)
	}
	if c.PID > 0 {
		if _, err := ProcCPU(c.PID); err != nil {
			return c, fmt.Errorf("%w: --pid %d: no such process (%v)", ErrBadConfig, c.PID, err)
		}
	}
	return c, nil
}

// RunFlood measures the witness alone for cfg.Alone, then under the flood for cfg.Duration.
// When ctx interrupts it, it returns the report of the part that ran with ctx's error.
// A lost connection ends the run at once, with the report and an error naming it.
// A main control it started is stopped before it returns.
func RunFlood(ctx context.Context, cfg FloodConfig) (*FloodReport, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	token, tokenArgs, err := loadTokenFile(cfg.TokenFile)
	if err != nil {
		return nil, err
	}
	_, _ = RaiseFileLimit()
	t := &target{addr: cfg.Addr, pid: cfg.PID}
	if cfg.Addr == "" {
		mc, err := StartMainControl(ctx, MainControlOptions{Binary: cfg.Binary, Args: append(tokenArgs, cfg.Args...)})
		if err != nil {
			return nil, err
		}
		t = &target{addr: mc.Addr, pid: mc.PID(), mc: mc}
	}
	rep, err := runFlood(ctx, cfg, t, token)
	if cerr := t.close(); err == nil && cerr != nil {
		err = cerr
	}
	return rep, err
}

// flood is one run's connections.
type flood struct {
	cfg      FloodConfig
	pid      int
	w        *witness
	flooders []*flooder
}

func runFlood(ctx context.Context, cfg FloodConfig, t *target, token []byte) (*FloodReport, error) {
	f := &flood{cfg: cfg, pid: t.pid}
	defer f.close()
	if err := f.dial(t.addr, token); err != nil {
		return nil, err
	}
	rep := newFloodReport(cfg, t, f.w.fc.rx != nil)
	err := f.measure(ctx, rep)
	if rep.Flood.MainControl == nil && t.pid > 0 && rep.Flood.Seconds > 0 {
		rep.MainControlNote = fmt.Sprintf("the process at --pid %d exited during the run", t.pid)
		if t.mc != nil {
			rep.MainControlNote = fmt.Sprintf("the main control the harness started (pid %d) exited during the run", t.pid)
		}
	}
	return rep, err
}

// dial connects the witness and the flooders.
// They stay idle until measure uses them.
// So alone and under the flood, the main control holds the same connections.
func (f *flood) dial(addr string, token []byte) error {
	fc, err := dialClient(addr, nil, token, "apollo11-bench-flood-witness", 10*time.Second)
	if err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	fc.rx = newRxStamper(fc.c)
	f.w = &witness{fc: fc, kind: f.cfg.Request, interval: f.cfg.WitnessInterval}
	frame, err := floodRequest(f.cfg.Request, "f")
	if err != nil {
		return err
	}
	for i := range f.cfg.Flooders {
		fc, err := dialClient(addr, nil, token, "apollo11-bench-flood", 10*time.Second)
		if err != nil {
			return fmt.Errorf("flooder %d: %w", i, err)
		}
		f.flooders = append(f.flooders, newFlooder(fc, frame, f.cfg.Window))
	}
	return nil
}

func (f *flood) close() {
	if f.w != nil {
		f.w.fc.c.Close()
	}
	for _, fl := range f.flooders {
		fl.fc.c.Close()
	}
}

// measure runs the two phases into rep.
func (f *flood) measure(ctx context.Context, rep *FloodReport) error {
	rounds := func() (int64, int64) { n := f.w.rounds.Load(); return n, n }
	m0 := markCost(f.pid)
	times, err := f.phase(ctx, "alone ", f.cfg.Alone, rounds, nil)
	rep.Alone.set(times, m0, markCost(f.pid))
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		rep.Interrupted = true
		return ctx.Err()
	}

	lost := newConnLoss()
	fctx, stopWriters := context.WithCancel(ctx)
	defer stopWriters()
	var wg sync.WaitGroup
	m0 = markCost(f.pid)
	for i, fl := range f.flooders {
		name := fmt.Sprintf("flooder %d", i)
		wg.Add(2)
		go func() { defer wg.Done(); lost.add(name, fl.read()) }()
		go func() {
			defer wg.Done()
			if err := fl.write(fctx); err != nil {
				lost.add(name, err)
			}
		}()
	}
	times, err = f.phase(ctx, "flood ", f.cfg.Duration, f.counts, lost.lost)
	m1 := markCost(f.pid)
	rep.Flood.set(times, m0, m1)
	rep.Flood.setFlooders(f.flooders, m1.at.Sub(m0.at))
	// A witness that failed may have been the first to see its main control go.
	// The flooders' losses, if they follow, say so.
	nLost, firstLost := lost.settled(len(f.flooders), err != nil)
	lost.stop()
	stopWriters()
	for _, fl := range f.flooders {
		fl.fc.c.Close() // a writer blocked on a full socket returns
	}
	wg.Wait()
	switch {
	case nLost > 0:
		rep.ConnErrors, rep.ConnError = nLost, firstLost.Error()
		return fmt.Errorf("lost %d of %d flooders' connections to the main control; first: %w", nLost, len(f.flooders), firstLost)
	case err != nil:
		return err
	case ctx.Err() != nil:
		rep.Interrupted = true
		return ctx.Err()
	}
	return nil
}

// counts returns the flooders' answered and sent requests so far.
func (f *flood) counts() (answered, sent int64) {
	for _, fl := range f.flooders {
		answered += fl.answered.Load()
		sent += fl.sent.Load()
	}
	return answered, sent
}

// phase runs the witness for d, until ctx ends or until lost is closed.
// Its last round trip may end later.
// It draws a progress bar of what count returns.
func (f *flood) phase(ctx context.Context, label string, d time.Duration, count func() (done, sent int64),
	lost <-chan struct{}) (witnessTimes, error) {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The witness's wait for a reply ends with pctx.
	// A blocked read does not watch a context, but its deadline does.
	stop := context.AfterFunc(pctx, func() { _ = f.w.fc.c.SetReadDeadline(time.Now()) })
	defer stop()
	start := time.Now()
	type result struct {
		times witnessTimes
		err   error
	}
	done := make(chan result, 1)
	go func() {
		times, err := f.w.run(pctx, start.Add(d))
		done <- result{times, err}
	}()
	bar := newProgress(f.cfg.Progress, label, 0, d, start)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			bar.final(count())
			bar.finish()
			return r.times, r.err
		case <-lost:
			lost = nil
			cancel()
		case <-tick.C:
			bar.update(count())
		}
	}
}

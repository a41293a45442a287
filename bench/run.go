package bench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// target is the main control a run loads. It is started here, or given.
type target struct {
	addr string
	pid  int
	mc   *MainControl // nil when given
}

func openTarget(ctx context.Context, cfg *Config) (*target, error) {
	if cfg.Addr != "" {
		return &target{addr: cfg.Addr, pid: cfg.PID}, nil
	}
	mc, err := StartMainControl(ctx, MainControlOptions{Binary: cfg.Binary, Fsync: cfg.Fsync,
		DataDir: cfg.DataDir, Args: cfg.MainControlArgs, TLS: cfg.TLS})
	if err != nil {
		return nil, err
	}
	return &target{addr: mc.Addr, pid: mc.PID(), mc: mc}, nil
}

func (t *target) close() error {
	if t.mc == nil {
		return nil
	}
	return t.mc.Close()
}

// Run loads a main control with producers and executors as cfg says.
// It reports throughput, latencies and CPU.
// With RateOfPeak it first measures the closed-loop peak for PeakDuration.
// Then it runs open loop at that fraction of it.
// A main control it started is stopped before Run returns, even when ctx is cancelled.
// Its temp data dir is removed too.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	_, _ = RaiseFileLimit()
	t, err := openTarget(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	rep, err := runTarget(ctx, cfg, t)
	if cerr := t.close(); err == nil && cerr != nil {
		err = cerr
	}
	return rep, err
}

func runTarget(ctx context.Context, cfg Config, t *target) (*Report, error) {
	if cfg.RateOfPeak <= 0 {
		return runOnce(ctx, cfg, t, "")
	}
	pc := cfg
	pc.Rate, pc.RateOfPeak, pc.Tasks, pc.Duration = 0, 0, 0, cfg.PeakDuration
	peak, err := runOnce(ctx, pc, t, "peak ")
	if err != nil {
		return nil, fmt.Errorf("cannot measure the peak: %w", err)
	}
	if peak.Throughput <= 0 {
		return nil, errors.New("cannot measure the peak: nothing finished")
	}
	cfg.Rate = peak.Throughput * cfg.RateOfPeak
	rep, err := runOnce(ctx, cfg, t, "")
	if rep != nil {
		rep.PeakThroughput = peak.Throughput
	}
	return rep, err
}

// runID tells apart the executors of runs against one main control.
var runID = strconv.FormatInt(time.Now().UnixNano()%1e9, 36)

// fleet is the executors of one run.
type fleet struct {
	raw   []*RawExecutor
	procs []*exec.Cmd
	wg    sync.WaitGroup
	stop  context.CancelFunc
}

func startFleet(ctx context.Context, cfg Config, t *target, label string) (*fleet, error) {
	ectx, cancel := context.WithCancel(ctx)
	f := &fleet{stop: cancel}
	for i := range cfg.Executors {
		id := fmt.Sprintf("bench-%s-%s%d", runID, label, i)
		if cfg.ExecutorMode == "process" {
			if err := f.spawn(cfg, t.addr, id); err != nil {
				f.close()
				return nil, err
			}
			continue
		}
		e, err := DialExecutor(ExecutorOptions{Addr: t.addr, ID: id, Types: []string{cfg.TaskType},
			Slots: cfg.Slots, Token: cfg.Token, TLS: cfg.TLS})
		if err != nil {
			f.close()
			return nil, err
		}
		f.raw = append(f.raw, e)
	}
	if len(f.procs) > 0 {
		if err := waitExecutors(ectx, t.addr, cfg.TLS, cfg.Token, len(f.procs)); err != nil {
			f.close()
			return nil, err
		}
	}
	return f, nil
}

// spawn starts one `apollo11 executor` process.
func (f *fleet) spawn(cfg Config, addr, id string) error {
	bin := cfg.Binary
	if bin == "" {
		var err error
		if bin, err = DefaultBinary(); err != nil {
			return err
		}
	}
	args := append([]string{"executor", "--connect", addr, "--id", id, "--types", cfg.TaskType,
		"--slots", strconv.Itoa(cfg.Slots)}, cfg.ExecutorArgs...)
	cmd := exec.Command(bin, args...)
	cmd.Env = childEnv()
	cmd.Stderr = &tailBuffer{max: 16 << 10}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot start %s executor: %w", bin, err)
	}
	f.procs = append(f.procs, cmd)
	return nil
}

// run starts the raw executors' loops. Their timelines begin at start.
// A loop that ends with an error (its connection failed) is a lost connection.
func (f *fleet) run(ctx context.Context, start time.Time, lost *connLoss) {
	ectx, cancel := context.WithCancel(ctx)
	prev := f.stop
	f.stop = func() { cancel(); prev() }
	for _, e := range f.raw {
		e.tl = newTimeline(start)
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			if err := e.Run(ectx); err != nil {
				lost.add("executor "+e.ID, err)
			}
		}()
	}
}

// cpu returns the CPU time used so far by the executor processes.
func (f *fleet) cpu() time.Duration {
	var d time.Duration
	for _, c := range f.procs {
		if n, err := ProcCPU(c.Process.Pid); err == nil {
			d += n
		}
	}
	return d
}

func (f *fleet) tasks() int64 {
	var n int64
	for _, e := range f.raw {
		n += e.Tasks()
	}
	return n
}

func (f *fleet) close() {
	f.stop()
	for _, e := range f.raw {
		_ = e.Close()
	}
	f.wg.Wait()
	for _, c := range f.procs {
		_ = c.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = c.Process.Kill()
			<-done
		}
	}
}

// runOnce is one measured run against t.
func runOnce(ctx context.Context, cfg Config, t *target, phase string) (*Report, error) {
	fl, err := startFleet(ctx, cfg, t, phase[:min(len(phase), 1)])
	if err != nil {
		return nil, err
	}
	defer fl.close()
	prods := make([]*producer, cfg.Producers)
	conns := make([]*frameConn, cfg.Producers)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.c.Close()
			}
		}
	}()
	for i := range conns {
		if conns[i], err = dialClient(t.addr, cfg.TLS, cfg.Token, "apollo11-bench", 10*time.Second); err != nil {
			return nil, fmt.Errorf("producer %d: %w", i, err)
		}
	}
	// Every CPU figure, the machine's included, is taken over one interval, cpu0 to cpu1.
	// That way the shares agree.
	// It is sampled before the start, so it holds the run however slow the samples are.
	mc0 := sampleProc(t.pid)
	disk0 := markDisk(t)
	self0 := SelfCPU()
	busy0, all0, _ := MachineCPU()
	fleet0 := fl.cpu()
	cpu0 := time.Now()
	start := time.Now().Add(10 * time.Millisecond)
	total := cfg.total()
	for i := range prods {
		prods[i] = newProducer(conns[i], NewPacer(start, cfg.Rate, total, i, cfg.Producers), &cfg, start)
	}
	lost := newConnLoss()
	fl.run(ctx, start, lost)

	var readers, writers sync.WaitGroup
	wctx, stopWriters := context.WithCancel(ctx)
	defer stopWriters()
	for i, p := range prods {
		readers.Add(1)
		go func() {
			defer readers.Done()
			lost.add(fmt.Sprintf("producer %d", i), p.read())
		}()
		writers.Add(1)
		go func() {
			defer writers.Done()
			if err := p.write(wctx); err != nil {
				lost.add(fmt.Sprintf("producer %d", i), err)
			}
		}()
	}
	bar := newProgress(cfg.Progress, phase, total, cfg.Duration, start)
	wait := &waiter{prods: prods, fleet: fl, wait: cfg.Wait, lost: lost.lost}
	err = wait.until(ctx, cfg.Drain, bar)
	nConns := len(conns) + len(fl.raw)
	nLost, firstLost := lost.settled(nConns, false)
	lost.stop()
	stopWriters()
	if nLost > 0 {
		for _, c := range conns {
			c.c.Close() // a writer blocked on a dead peer returns
		}
	}
	writers.Wait()
	end := wait.end(start)
	self1 := SelfCPU()
	mc1 := sampleProc(t.pid)
	disk1 := markDisk(t)
	busy1, all1, _ := MachineCPU()
	fleet1 := fl.cpu()
	cpu1 := time.Now()
	sent, _, _ := wait.sent()
	bar.final(wait.completed(), sent)
	bar.finish()
	for _, c := range conns {
		c.c.Close()
	}
	readers.Wait()
	fl.close()
	rep := assemble(cfg, t, prods, fl, start, end)
	rep.Phase = phase
	rep.CPUInterval = cpu1.Sub(cpu0).Seconds()
	rep.Conns = nConns
	rep.setCPU(mc0, mc1, self1-self0)
	rep.setDisk(disk0, disk1)
	if rep.MainControl == nil && t.pid > 0 {
		if t.mc != nil {
			rep.MainControlNote = fmt.Sprintf("the main control the harness started (pid %d) exited during the run", t.pid)
		} else {
			rep.MainControlNote = fmt.Sprintf("the process at --pid %d exited during the run", t.pid)
		}
	}
	if len(fl.procs) > 0 {
		p := rep.share(fleet1 - fleet0)
		rep.ExecutorProcs = &p
	}
	rep.setMachine(busy1-busy0, all1-all0)
	if nLost > 0 {
		rep.ConnErrors = int64(nLost)
		rep.ConnError = firstLost.Error()
		// The lost connections are the cause.
		// An unfinished drain or a cancelled context after them says less.
		err = fmt.Errorf("lost %d of %d connections to the main control; first: %w", nLost, nConns, firstLost)
	}
	return rep, err
}

// waiter watches a run until every submit has finished.
type waiter struct {
	prods []*producer
	fleet *fleet
	wait  bool
	lost  <-chan struct{} // closed when a connection fails
}

func (w *waiter) sent() (sent, finished int64, writing bool) {
	for _, p := range w.prods {
		sent += p.sent.Load()
		finished += p.finished.Load()
		writing = writing || p.sending.Load()
	}
	return
}

// completed is the run's count of tasks done end to end.
// With wait=true those are done replies, else tasks that reached an executor.
func (w *waiter) completed() int64 {
	if w.wait {
		var n int64
		for _, p := range w.prods {
			n += p.done.Load()
		}
		return n
	}
	return w.fleet.tasks()
}

// until waits for every submit to finish, for ctx, or for drain after the writers stopped.
// Without wait=true it also waits for raw executors to receive the accepted tasks.
func (w *waiter) until(ctx context.Context, drain time.Duration, bar *progress) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var drainEnd time.Time
	for {
		sent, finished, writing := w.sent()
		bar.update(w.completed(), sent)
		if !writing {
			if finished >= sent && w.executorsCaughtUp() {
				return nil
			}
			if drainEnd.IsZero() {
				drainEnd = time.Now().Add(drain)
			} else if time.Now().After(drainEnd) {
				return fmt.Errorf("%d of %d submits unfinished %s after the last one", sent-finished, sent, drain)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.lost:
			return errors.New("a connection to the main control failed") // runOnce reports which
		case <-tick.C:
		}
	}
}

func (w *waiter) executorsCaughtUp() bool {
	if w.wait || len(w.fleet.raw) == 0 {
		return true
	}
	var acked int64
	for _, p := range w.prods {
		acked += p.acked.Load()
	}
	return w.fleet.tasks() >= acked
}

// end returns the time of the last completion.
func (w *waiter) end(start time.Time) time.Time {
	var last int64
	for _, p := range w.prods {
		last = max(last, p.lastFin.Load())
	}
	for _, e := range w.fleet.raw {
		last = max(last, e.lastTask.Load())
	}
	if last == 0 {
		return time.Now()
	}
	end := time.Unix(0, last)
	if end.Before(start) {
		return start
	}
	return end
}

// procSample is a process's CPU and memory at one moment.
type procSample struct {
	ok        bool
	cpu       time.Duration
	rss, peak int64
}

func sampleProc(pid int) procSample {
	if pid <= 0 {
		return procSample{}
	}
	cpu, err := ProcCPU(pid)
	if err != nil {
		return procSample{}
	}
	rss, peak, err := ProcMem(pid)
	if err != nil || rss == 0 {
		// No resident memory means a zombie.
		// The process exited and was not reaped yet, so its figures are its last ones.
		return procSample{}
	}
	return procSample{ok: true, cpu: cpu, rss: rss, peak: peak}
}

// cores is the machine's CPU count, for the CPU shares.
var cores = runtime.NumCPU()

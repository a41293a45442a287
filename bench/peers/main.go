// Command peers loads beanstalkd or gearmand with the workload `apollo11 bench` puts on apollo11.
// That way the numbers can be compared.
// Producers pipeline submits with a window, and workers answer at once.
// Payloads have the same size.
// The daemon is started here, so its CPU and memory can be read from /proc.
//
//	go run ./bench/peers --system beanstalkd --tasks 500000
//	go run ./bench/peers --system beanstalkd --fsync always --tasks 100000
//	go run ./bench/peers --system gearmand --tasks 500000
//	go run ./bench/peers --regime one-at-a-time --system beanstalkd --fsync always --tasks 30000
//	go run ./bench/peers --regime one-at-a-time --system gearmand --fsync always --tasks 2000
//
// There are two regimes.
// Throughput is the default, with a few workers holding many jobs each.
// One-at-a-time runs 8 workers x 1 job and 4 producers with 64 jobs in flight each.
// Its payloads are 100 bytes.
// There each worker's next job waits on the server's durability path.
//
// beanstalkd has no completion notice to the producer.
// So its equivalent of apollo11's submit-to-done is not measured.
// The apollo11 run to compare with is `--wait=false` (dispatch only).
// gearmand's foreground jobs do send WORK_COMPLETE back, like apollo11's wait=true.
// Its background jobs (--background, the one-at-a-time default) do not, like wait=false;
// only they reach its persistent queue (--fsync always: libsqlite3).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/apollo11/apollo11/bench"
)

type config struct {
	system    string
	fsync     string
	tasks     int64
	producers int
	workers   int
	slots     int
	window    int
	payload   int
	threads   int
	// background submits gearmand jobs with SUBMIT_JOB_BG: no WORK_COMPLETE
	// comes back, like apollo11's wait=false, and only these jobs go to
	// gearmand's persistent queue.
	background bool
}

func main() {
	var c config
	flag.StringVar(&c.system, "system", "beanstalkd", "beanstalkd or gearmand")
	flag.StringVar(&c.fsync, "fsync", "off", "beanstalkd: off (no binlog), never (-F), batch (-f 10) or always (-f 0); gearmand: off (builtin queue) or always (libsqlite3 queue, background jobs)")
	flag.Int64Var(&c.tasks, "tasks", 200_000, "jobs to submit")
	flag.IntVar(&c.producers, "producers", 4, "producer connections")
	flag.IntVar(&c.workers, "workers", 8, "worker connections")
	flag.IntVar(&c.slots, "slots", 256, "jobs a worker connection holds at once (reserves or grabs in flight)")
	flag.IntVar(&c.window, "window", 1024, "submits in flight per producer")
	flag.IntVar(&c.payload, "payload", 16, "payload bytes per job")
	flag.IntVar(&c.threads, "threads", 4, "gearmand I/O threads")
	flag.BoolVar(&c.background, "background", false, "gearmand: background jobs (SUBMIT_JOB_BG, acked by JOB_CREATED); the one-at-a-time regime sets it unless given")
	regime := flag.String("regime", "throughput", "throughput (the flags' defaults) or one-at-a-time (sets -workers 8 -slots 1 -producers 4 -window 64 -payload 100 unless given)")
	flag.Parse()
	if err := applyRegime(&c, *regime); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

// applyRegime presets the load of a regime. Flags given explicitly win.
func applyRegime(c *config, regime string) error {
	switch regime {
	case "throughput":
		return nil
	case "one-at-a-time":
	default:
		return fmt.Errorf("--regime %q: want throughput or one-at-a-time", regime)
	}
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	preset := func(name string, dst *int, v int) {
		if !set[name] {
			*dst = v
		}
	}
	preset("workers", &c.workers, 8)
	preset("slots", &c.slots, 1)
	preset("producers", &c.producers, 4)
	preset("window", &c.window, 64)
	preset("payload", &c.payload, 100)
	if !set["background"] {
		c.background = true // the regime's apollo11 run is wait=false
	}
	return nil
}

// daemon is the peer server child process.
type daemon struct {
	cmd  *exec.Cmd
	addr string
	dir  string
}

func startDaemon(c config) (*daemon, error) {
	addr, err := bench.FreeAddr()
	if err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(addr)
	dir, err := os.MkdirTemp("", "apollo11-peers-")
	if err != nil {
		return nil, err
	}
	d := &daemon{addr: addr, dir: dir}
	var args []string
	switch c.system {
	case "beanstalkd":
		args = []string{"-l", host, "-p", port}
		switch c.fsync {
		case "off":
		case "never":
			args = append(args, "-b", dir, "-F")
		case "batch":
			args = append(args, "-b", dir, "-f", "10")
		case "always":
			args = append(args, "-b", dir, "-f", "0")
		default:
			return nil, fmt.Errorf("--fsync %q", c.fsync)
		}
		d.cmd = exec.Command("beanstalkd", args...)
	case "gearmand":
		args = []string{"-L", host, "-p", port, "-t", strconv.Itoa(c.threads),
			"-l", dir + "/gearmand.log", "-P", dir + "/gearmand.pid", "--verbose", "ERROR"}
		switch c.fsync {
		case "off":
		case "always":
			// Only background jobs reach gearmand's persistent queue, and
			// SQLite commits (and fsyncs) each insert and delete.
			if !c.background {
				return nil, errors.New("gearmand persists background jobs only: --fsync always needs --background")
			}
			args = append(args, "-q", "libsqlite3", "--libsqlite3-db", dir+"/gearmand.sqlite")
		default:
			return nil, fmt.Errorf("--fsync %q: gearmand takes off or always", c.fsync)
		}
		d.cmd = exec.Command("gearmand", args...)
	default:
		return nil, fmt.Errorf("--system %q: want beanstalkd or gearmand", c.system)
	}
	d.cmd.Stderr = os.Stderr
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	for range 500 {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			return d, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	d.stop()
	return nil, fmt.Errorf("%s did not listen on %s", c.system, addr)
}

func (d *daemon) stop() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = d.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(d.dir)
}

// counters are shared by a run's goroutines.
type counters struct {
	sent, acked, dispatched, done atomic.Int64
	last                          atomic.Int64 // Unix ns of the latest completion
}

// payload returns the job body, the send time padded to size.
func payload(at int64, size int) []byte {
	b := strconv.AppendInt(nil, at, 10)
	for len(b) < size {
		b = append(b, 'x')
	}
	return b
}

// sentAt reads the send time back from a job body.
func sentAt(body []byte) int64 {
	n := 0
	for n < len(body) && body[n] >= '0' && body[n] <= '9' {
		n++
	}
	v, _ := strconv.ParseInt(string(body[:n]), 10, 64)
	return v
}

func run(ctx context.Context, c config) error {
	if _, err := bench.RaiseFileLimit(); err != nil {
		return err
	}
	d, err := startDaemon(c)
	if err != nil {
		return err
	}
	defer d.stop()
	var cnt counters
	dispHists := make([]*bench.Histogram, c.workers)
	doneHists := make([]*bench.Histogram, c.producers)
	wctx, stopWorkers := context.WithCancel(ctx)
	var wwg sync.WaitGroup
	for i := range c.workers {
		dispHists[i] = bench.NewHistogram()
		conn, err := net.Dial("tcp", d.addr)
		if err != nil {
			stopWorkers()
			return err
		}
		context.AfterFunc(wctx, func() { conn.Close() })
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			if c.system == "beanstalkd" {
				beanstalkWorker(conn, c, &cnt, dispHists[i])
			} else {
				gearmanWorker(conn, c, &cnt, dispHists[i])
			}
		}()
	}
	time.Sleep(200 * time.Millisecond) // let the workers register
	pid := d.cmd.Process.Pid
	cpu0, _ := bench.ProcCPU(pid)
	self0 := bench.SelfCPU()
	start := time.Now()
	var pwg sync.WaitGroup
	perProducer := c.tasks / int64(c.producers)
	for i := range c.producers {
		doneHists[i] = bench.NewHistogram()
		conn, err := net.Dial("tcp", d.addr)
		if err != nil {
			stopWorkers()
			return err
		}
		defer conn.Close()
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			if err := produce(conn, c, perProducer, &cnt, doneHists[i]); err != nil {
				fmt.Fprintln(os.Stderr, "producer:", err)
			}
		}()
	}
	total := perProducer * int64(c.producers)
	want := func() int64 {
		if c.system == "gearmand" && !c.background {
			return cnt.done.Load()
		}
		return cnt.dispatched.Load()
	}
	deadline := time.Now().Add(5 * time.Minute)
	for want() < total && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	end := time.Unix(0, cnt.last.Load())
	cpu1, _ := bench.ProcCPU(pid)
	_, peak, _ := bench.ProcMem(pid)
	self1 := bench.SelfCPU()
	stopWorkers()
	wwg.Wait()
	pwg.Wait()
	elapsed := end.Sub(start).Seconds()
	disp, done := bench.NewHistogram(), bench.NewHistogram()
	for _, h := range dispHists {
		disp.Merge(h)
	}
	for _, h := range doneHists {
		done.Merge(h)
	}
	mode := ""
	if c.system == "gearmand" {
		mode = ", foreground jobs"
		if c.background {
			mode = ", background jobs"
		}
	}
	fmt.Printf("%s (fsync %s%s): %d producers, %d workers x %d, payload %d B, closed loop, window %d\n",
		c.system, c.fsync, mode, c.producers, c.workers, c.slots, c.payload, c.window)
	fmt.Printf("  jobs         %d submitted, %d completed in %.2f s\n", cnt.sent.Load(), want(), elapsed)
	fmt.Printf("  throughput   %.0f jobs/s\n", float64(want())/elapsed)
	ds, dn := disp.Summarize(), done.Summarize()
	fmt.Printf("  submit -> dispatch  p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f ms\n", ds.P50, ds.P90, ds.P99, ds.P999, ds.Max)
	if dn.Count > 0 {
		fmt.Printf("  submit -> done      p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f ms\n", dn.P50, dn.P90, dn.P99, dn.P999, dn.Max)
	}
	fmt.Printf("  server       cpu %.2f s = %.0f%% of one core, peak rss %.1f MiB\n", (cpu1 - cpu0).Seconds(),
		100*(cpu1-cpu0).Seconds()/elapsed, float64(peak)/(1<<20))
	fmt.Printf("  harness      cpu %.2f s = %.0f%% of one core\n", (self1 - self0).Seconds(), 100*(self1-self0).Seconds()/elapsed)
	return nil
}

// produce submits n jobs keeping window in flight (closed loop).
func produce(conn net.Conn, c config, n int64, cnt *counters, done *bench.Histogram) error {
	credits := make(chan struct{}, c.window)
	for range c.window {
		credits <- struct{}{}
	}
	errc := make(chan error, 1)
	go func() { errc <- produceReplies(conn, c, n, cnt, done, credits) }()
	w := bufio.NewWriterSize(conn, 64<<10)
	for i := int64(0); i < n; i++ {
		select {
		case <-credits:
		case err := <-errc:
			return err
		}
		body := payload(time.Now().UnixNano(), c.payload)
		if c.system == "beanstalkd" {
			fmt.Fprintf(w, "put 0 0 120 %d\r\n%s\r\n", len(body), body)
		} else {
			writeGearman(w, "REQ", gearmanSubmit(c.background), []byte("bench"), []byte(""), body)
		}
		cnt.sent.Add(1)
		if len(credits) == 0 || w.Buffered() > 32<<10 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return <-errc
}

// produceReplies reads acks, and completions for gearmand.
// It hands back window credits.
func produceReplies(conn net.Conn, c config, n int64, cnt *counters, done *bench.Histogram, credits chan struct{}) error {
	r := bufio.NewReaderSize(conn, 64<<10)
	var finished int64
	for finished < n {
		if c.system == "beanstalkd" {
			line, err := r.ReadString('\n')
			if err != nil {
				return err
			}
			if !strings.HasPrefix(line, "INSERTED") {
				return fmt.Errorf("put answered %q", strings.TrimSpace(line))
			}
			cnt.acked.Add(1)
			finished++
			credits <- struct{}{}
			continue
		}
		typ, args, err := readGearman(r)
		if err != nil {
			return err
		}
		switch typ {
		case 8: // JOB_CREATED
			cnt.acked.Add(1)
			if c.background { // no WORK_COMPLETE follows
				finished++
				credits <- struct{}{}
			}
		case 13: // WORK_COMPLETE: handle \0 data
			now := time.Now().UnixNano()
			if len(args) == 2 {
				done.Record(now - sentAt(args[1]))
			}
			cnt.done.Add(1)
			cnt.last.Store(now)
			finished++
			credits <- struct{}{}
		default:
			return fmt.Errorf("gearmand sent packet type %d", typ)
		}
	}
	return nil
}

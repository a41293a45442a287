package reliability_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/internal/testbin"
)

// probeLimit is the promise: a well-behaved client is answered within it.
const probeLimit = 100 * time.Millisecond

// probeTries is how many probes may run before one within probeLimit: the
// host is shared and noisy, and a probe over the limit is retried (and
// counted in the figures) before the check fails.
const probeTries = 5

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// startMain runs the real main control with the suite's defaults (a data
// dir, short heartbeats, warnings only) and extra flags, which win.
func startMain(t testing.TB, dir string, extra ...string) *testbin.Proc {
	t.Helper()
	args := []string{"--data-dir", dir, "--log-level", "warn",
		"--heartbeat-timeout", "1500ms", "--heartbeat-interval", "500ms"}
	return testbin.StartMaincontrol(t, testbin.Build(t), append(args, extra...)...)
}

// probeResult is a well-behaved client's view of the main control.
type probeResult struct {
	latency time.Duration // slowest reply of the accepted probe
	worst   time.Duration // slowest reply of every probe, retried ones too
	retries int           // probes over probeLimit before the accepted one
}

// probeOnce dials a fresh client (welcome, hello, hello_ok), asks for
// stats and, with writes, submits, queries and cancels a task. It returns
// the slowest reply.
func probeOnce(addr string, token []byte, writes bool) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var slowest time.Duration
	step := func(start time.Time) { slowest = max(slowest, time.Since(start)) }
	start := time.Now()
	c, err := client.Dial(ctx, addr, client.Options{Token: token, Name: "probe", DialTimeout: 5 * time.Second, Logger: quiet})
	if err != nil {
		return 0, fmt.Errorf("probe dial: %w", err)
	}
	defer c.Close()
	step(start)
	start = time.Now()
	if _, err := c.Stats(ctx); err != nil {
		return 0, fmt.Errorf("probe stats: %w", err)
	}
	step(start)
	if !writes {
		return slowest, nil
	}
	start = time.Now()
	sub, err := c.Submit(ctx, client.SubmitRequest{Type: "probe"})
	if err != nil {
		return 0, fmt.Errorf("probe submit: %w", err)
	}
	step(start)
	start = time.Now()
	if _, err := c.Query(ctx, sub.ID); err != nil {
		return 0, fmt.Errorf("probe query: %w", err)
	}
	step(start)
	start = time.Now()
	if err := c.Cancel(ctx, sub.ID); err != nil {
		return 0, fmt.Errorf("probe cancel: %w", err)
	}
	step(start)
	return slowest, nil
}

// probe checks that a well-behaved client is answered within probeLimit,
// retrying a slow probe up to probeTries times. An error (no answer at
// all) fails at once.
func probe(t testing.TB, addr string, token []byte, writes bool) probeResult {
	t.Helper()
	var res probeResult
	for i := 0; i < probeTries; i++ {
		d, err := probeOnce(addr, token, writes)
		if err != nil {
			t.Errorf("well-behaved client: %v", err)
			return res
		}
		res.worst = max(res.worst, d)
		if d <= probeLimit {
			res.latency = d
			return res
		}
		res.retries++
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("well-behaved client: no probe of %d answered within %v (slowest %v)", probeTries, probeLimit, res.worst)
	res.latency = res.worst
	return res
}

// waitProbe polls until a probe succeeds (the main control is back) and
// returns when; it gives up after timeout.
func waitProbe(t testing.TB, addr string, token []byte, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		_, err := probeOnce(addr, token, false)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("main control not answering after %v: %v", timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stats returns the main control's stats.
func stats(t testing.TB, addr string, token []byte) client.Stats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{Token: token, Logger: quiet})
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	defer c.Close()
	st, err := c.Stats(ctx)
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	return st
}

// waitConnections waits until the main control counts at most want
// connections besides the one asking, and returns how long it took.
func waitConnections(t testing.TB, addr string, token []byte, want int, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		n, _ := strconv.Atoi(stats(t, addr, token).Extra["connections"])
		if n-1 <= want {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Errorf("main control still holds %d connections after %v (want %d)", n-1, timeout, want)
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rss returns the resident set size of process pid in bytes.
func rss(pid int) int64 { return procStatus(pid, "VmRSS") }

// procStatus returns a field of /proc/pid/status given in kB, in bytes
// (0 when the process is gone).
func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// rssWatch samples a process's RSS and keeps the peak.
type rssWatch struct {
	pid  int
	peak atomic.Int64
	stop chan struct{}
	done chan struct{}
}

func watchRSS(pid int) *rssWatch {
	w := &rssWatch{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	w.peak.Store(rss(pid))
	go func() {
		defer close(w.done)
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tk.C:
				if r := rss(pid); r > w.peak.Load() {
					w.peak.Store(r)
				}
			}
		}
	}()
	return w
}

// Stop ends sampling and returns the peak.
func (w *rssWatch) Stop() int64 {
	close(w.stop)
	<-w.done
	if r := rss(w.pid); r > w.peak.Load() {
		w.peak.Store(r)
	}
	return w.peak.Load()
}

// rssBound is how far above its baseline the main control's memory may
// stay after a flood: 64 MiB or twice the baseline, whichever is larger.
func rssBound(base int64) int64 { return max(base+64<<20, 2*base) }

// settleRSS lets the main control settle for 2 s after a flood and
// returns its lowest RSS meanwhile; if that is not within rssBound(base)
// it keeps watching for up to 15 s more, then fails the test.
func settleRSS(t testing.TB, pid int, base int64) int64 {
	t.Helper()
	settle := time.Now().Add(2 * time.Second)
	deadline := settle.Add(15 * time.Second)
	low := rss(pid)
	for {
		time.Sleep(200 * time.Millisecond)
		low = min(low, rss(pid))
		if time.Now().Before(settle) {
			continue
		}
		if low <= rssBound(base) {
			return low
		}
		if time.Now().After(deadline) {
			t.Errorf("main control RSS %s MiB did not return within %s MiB of its baseline %s MiB",
				mib(low), mib(rssBound(base)-base), mib(base))
			return low
		}
	}
}

// figureRSS fills the memory columns of f around a flood: base before,
// the peak during, the settled value after.
func figureRSS(t testing.TB, f *figure, pid int, flood func()) {
	t.Helper()
	base := rss(pid)
	w := watchRSS(pid)
	flood()
	peak := w.Stop()
	after := settleRSS(t, pid, base)
	if f.rssBase == 0 || base < f.rssBase {
		f.rssBase = base
	}
	f.rssPeak = max(f.rssPeak, peak)
	f.rssAfter = max(f.rssAfter, after)
}

package reliability_test

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apollo11/apollo11/internal/testbin"
)

// unitFile is the systemd unit the attacks run the main control as.
const unitFile = "../systemd/apollo11-maincontrol.service"

// unitLimits is what the unit gives the main control: its environment
// (the memory caps and GOMEMLIMIT), the MemoryMax past which the kernel
// kills it, and the watchdog past which systemd does.
type unitLimits struct {
	env       []string
	memoryMax int64
	watchdog  time.Duration
}

// readUnit reads the unit's Environment=, MemoryMax= and WatchdogSec=.
// Values with systemd specifiers (%S) are left out: the test sets those.
func readUnit(t testing.TB) unitLimits {
	t.Helper()
	b, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	var u unitLimits
	for _, line := range strings.Split(string(b), "\n") {
		key, val, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || strings.HasPrefix(key, "#") {
			continue
		}
		switch key {
		case "Environment":
			if !strings.Contains(val, "%") {
				u.env = append(u.env, val)
			}
		case "MemoryMax":
			u.memoryMax = unitBytes(t, val)
		case "WatchdogSec":
			u.watchdog = unitDuration(t, val)
		}
	}
	if u.memoryMax == 0 || u.watchdog == 0 {
		t.Fatalf("%s sets no MemoryMax or WatchdogSec", unitFile)
	}
	return u
}

// unitBytes parses a systemd size: a number with K, M, G or T (base 1024).
func unitBytes(t testing.TB, v string) int64 {
	t.Helper()
	shift := map[byte]uint{'K': 10, 'M': 20, 'G': 30, 'T': 40}
	s, n := v, uint(0)
	if sh, ok := shift[v[len(v)-1]]; ok {
		s, n = v[:len(v)-1], sh
	}
	x, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("MemoryMax=%s: %v", v, err)
	}
	return x << n
}

// unitDuration parses a systemd time span: plain seconds or a Go duration.
func unitDuration(t testing.TB, v string) time.Duration {
	t.Helper()
	if n, err := strconv.Atoi(v); err == nil {
		return time.Duration(n) * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("WatchdogSec=%s: %v", v, err)
	}
	return d
}

// target is a main control run as the unit runs it, guarded as systemd
// guards it: past MemoryMax it is killed (as by the kernel), and without a
// WATCHDOG=1 for WatchdogSec it gets SIGABRT (as from systemd).
type target struct {
	t     testing.TB
	unit  unitLimits
	addr  string
	dir   string
	args  []string
	token []byte
	proc  *testbin.Proc

	notify   *net.UnixConn
	lastPing atomic.Int64 // unix nanoseconds of the last READY=1 or WATCHDOG=1
	hwm      atomic.Int64 // VmHWM, bytes: the peak RSS of the process
	mu       sync.Mutex
	ended    string // why the guard ended the process, or how it exited
	stop     chan struct{}
	done     chan struct{}
}

// startTarget starts the main control with the unit's environment and the
// suite's data dir, on a fresh port, plus extra flags.
func startTarget(t testing.TB, token []byte, extra ...string) *target {
	t.Helper()
	tg := &target{t: t, unit: readUnit(t), addr: testbin.FreeAddr(t), dir: t.TempDir(), token: token}
	tg.args = append([]string{"--data-dir", filepath.Join(tg.dir, "data")}, extra...)
	if token != nil {
		file := filepath.Join(tg.dir, "token")
		if err := os.WriteFile(file, append(token, '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
		tg.args = append(tg.args, "--token-file", file)
	}
	// A short path: a unix socket's name is at most 108 bytes.
	sockDir, err := os.MkdirTemp("", "a11")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "notify")
	tg.notify, err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.notify.Close() })
	go tg.readNotify()
	tg.unit.env = append(tg.unit.env, "NOTIFY_SOCKET="+sock,
		"WATCHDOG_USEC="+strconv.FormatInt(tg.unit.watchdog.Microseconds(), 10))
	tg.start()
	return tg
}

// start runs the process (again, on the same data dir and port) and
// guards it.
func (tg *target) start() {
	tg.t.Helper()
	tg.lastPing.Store(time.Now().UnixNano())
	tg.proc = testbin.StartMaincontrolEnv(tg.t, testbin.Build(tg.t), tg.unit.env, tg.addr, tg.args...)
	tg.stop, tg.done = make(chan struct{}), make(chan struct{})
	go tg.guard(tg.proc, tg.stop, tg.done)
	tg.t.Cleanup(tg.unguard)
}

func (tg *target) readNotify() {
	buf := make([]byte, 4096)
	for {
		n, err := tg.notify.Read(buf)
		if err != nil {
			return
		}
		if s := string(buf[:n]); strings.Contains(s, "WATCHDOG=1") || strings.Contains(s, "READY=1") {
			tg.lastPing.Store(time.Now().UnixNano())
		}
	}
}

// guard samples the process every 50 ms, keeps its VmHWM and ends it as
// systemd would.
func (tg *target) guard(p *testbin.Proc, stop, done chan struct{}) {
	defer close(done)
	pid := p.Cmd.Process.Pid
	tk := time.NewTicker(50 * time.Millisecond)
	defer tk.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tk.C:
		}
		if p.Exited() {
			tg.setEnded("exited by itself (status " + strconv.Itoa(p.ExitCode()) + ")")
			return
		}
		tg.hwm.Store(max(tg.hwm.Load(), procStatus(pid, "VmHWM")))
		if r := rss(pid); r > tg.unit.memoryMax {
			p.Kill()
			tg.setEnded("killed at MemoryMax (RSS " + mib(r) + " MiB)")
			return
		}
		if silent := time.Since(time.Unix(0, tg.lastPing.Load())); silent > tg.unit.watchdog {
			p.Signal(syscall.SIGABRT)
			_ = p.Wait(10 * time.Second)
			tg.setEnded("watchdog: no WATCHDOG=1 for " + silent.Round(time.Second).String())
			return
		}
	}
}

func (tg *target) setEnded(why string) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if tg.ended == "" {
		tg.ended = why
	}
}

// unguard stops the guard (the process is left running).
func (tg *target) unguard() {
	select {
	case <-tg.stop:
	default:
		close(tg.stop)
	}
	<-tg.done
}

// down returns why the process is no longer up, "" while it is.
func (tg *target) down() string {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if tg.ended == "" && tg.proc.Exited() {
		return "exited"
	}
	return tg.ended
}

// restart starts the process again after it went down, as the unit's
// Restart=on-failure does, so that what it lost can be counted.
func (tg *target) restart() {
	tg.t.Helper()
	tg.unguard()
	if !tg.proc.Exited() {
		tg.proc.Kill()
	}
	tg.start()
}

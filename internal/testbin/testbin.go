// Package testbin builds the apollo11 binary once per test process and runs
// it as a child process. It serves tests that need the real thing. Those
// are crash tests (kill -9), CLI tests and the reliability suite.
package testbin

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apollo11/apollo11/cluster"
	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/internal/syncbuf"
)

var (
	buildMu   sync.Mutex
	buildDir  string
	buildErr  error
	buildDone = map[string]string{} // command name -> built binary
)

// moduleRoot finds the directory holding go.mod, from this source file.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Build compiles cmd/apollo11 once per test process and returns its path.
func Build(t testing.TB) string {
	t.Helper()
	return BuildCmd(t, "apollo11")
}

// BuildBench compiles cmd/apollo11-bench once per test process, beside
// the apollo11 binary, which it then starts by default.
func BuildBench(t testing.TB) string {
	t.Helper()
	Build(t)
	return BuildCmd(t, "apollo11-bench")
}

// BuildCmd compiles cmd/NAME once per test process into one temp dir.
func BuildCmd(t testing.TB, name string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if path, ok := buildDone[name]; ok {
		return path
	}
	if buildDir == "" && buildErr == nil {
		buildDir, buildErr = os.MkdirTemp("", "apollo11-testbin-")
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	path := filepath.Join(buildDir, name)
	cmd := exec.Command("go", "build", "-o", path, "./cmd/"+name)
	cmd.Dir = moduleRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/%s: %v\n%s", name, err, out)
	}
	buildDone[name] = path
	return path
}

// Main runs a test package's tests and removes the binary Build made.
// Otherwise each run would leave a binary per package in the temp dir.
// A package that uses Build calls it from TestMain, as
// os.Exit(testbin.Main(m)).
//
// It also catches SIGHUP when the test process started with it ignored,
// as under nohup: an ignored signal stays ignored across exec, while a
// caught one is reset. The daemons the tests start then see SIGHUP as
// from a terminal, and their SIGHUP tests test what they should.
func Main(m *testing.M) int {
	if signal.Ignored(syscall.SIGHUP) {
		signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	}
	code := m.Run()
	if buildDir != "" {
		if err := os.RemoveAll(buildDir); err != nil {
			fmt.Fprintln(os.Stderr, "testbin: cannot remove the test binary:", err)
		}
	}
	return code
}

// FreeAddr returns a loopback address whose port was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Proc is a running apollo11 child process.
type Proc struct {
	t    testing.TB
	Cmd  *exec.Cmd
	Addr string // for main controls: the address it listens on
	out  *syncbuf.Buffer
	done chan struct{}
	err  error
}

// Start runs the binary with args. The process is killed when the test
// ends if it is still running.
func Start(t testing.TB, bin string, env []string, args ...string) *Proc {
	t.Helper()
	p := &Proc{t: t, out: &syncbuf.Buffer{}, done: make(chan struct{})}
	p.Cmd = exec.Command(bin, args...)
	p.Cmd.Env = append(os.Environ(), env...)
	p.Cmd.Stdout, p.Cmd.Stderr = p.out, p.out
	// With Pdeathsig, a test binary that dies without running its cleanups
	// takes its daemons with it, instead of leaving them listening. It may
	// die by a -timeout panic or a kill.
	p.Cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("cannot start %s: %v", bin, err)
	}
	go func() {
		p.err = p.Cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.Exited() {
			p.Kill()
		}
	})
	return p
}

// StartMaincontrol runs `apollo11 maincontrol` on a free loopback port with
// the given extra flags and waits until it answers with a welcome.
func StartMaincontrol(t testing.TB, bin string, args ...string) *Proc {
	t.Helper()
	return StartMaincontrolEnv(t, bin, nil, FreeAddr(t), args...)
}

// StartMaincontrolEnv is StartMaincontrol with extra environment (as a
// systemd unit sets it) and a given listen address (a restart reuses it).
func StartMaincontrolEnv(t testing.TB, bin string, env []string, addr string, args ...string) *Proc {
	t.Helper()
	p := Start(t, bin, env, append([]string{"maincontrol", "--listen", addr}, args...)...)
	p.Addr = addr
	if err := WaitWelcome(addr, 20*time.Second, p.done); err != nil {
		p.Kill()
		t.Fatalf("main control did not come up: %v\noutput:\n%s", err, p.Output())
	}
	return p
}

// LoadedRaft is the flags that stretch a cluster member's Raft timeouts
// with the host's load, as the in-process cluster tests stretch theirs.
// With the defaults (400 ms, a lease of 200 ms) a member starved of CPU
// loses its leadership again and again, and each loss closes every
// connection.
func LoadedRaft() []string {
	hb := patience.Scale(cluster.DefaultHeartbeatTimeout).Round(time.Millisecond)
	el := patience.Scale(cluster.DefaultElectionTimeout).Round(time.Millisecond)
	return []string{"--raft-heartbeat-timeout", hb.String(), "--raft-election-timeout", el.String()}
}

// WaitWelcome polls addr until a connection gets the first bytes of a
// welcome frame, or until timeout or exited closes.
func WaitWelcome(addr string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			buf := make([]byte, 16)
			n, rerr := c.Read(buf)
			c.Close()
			if rerr == nil && n > 4 && strings.HasPrefix(string(buf[4:n]), "type=welcome") {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("process exited")
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no welcome from %s within %v (last error %v)", addr, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Output returns what the process wrote so far.
func (p *Proc) Output() string { return p.out.String() }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill sends SIGKILL to the process group and waits for the exit.
func (p *Proc) Kill() {
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Signal sends sig to the process.
func (p *Proc) Signal(sig syscall.Signal) { _ = p.Cmd.Process.Signal(sig) }

// Wait waits up to timeout for the exit and returns its error. The error
// is nil for exit status 0.
func (p *Proc) Wait(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		return fmt.Errorf("still running after %v", timeout)
	}
}

// ExitCode returns the exit code once the process exited, -1 if killed.
func (p *Proc) ExitCode() int {
	<-p.done
	return p.Cmd.ProcessState.ExitCode()
}

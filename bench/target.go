package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apollo11/apollo11/auth"
)

// MainControlOptions says how to start a main control child process.
type MainControlOptions struct {
	Binary string // the apollo11 binary; "" is DefaultBinary
	// Fsync is "off", "never", "batch" or "always".
	// "off" has no data dir, so persistence is off.
	// The three last use DataDir, or a temp dir removed at Stop.
	Fsync   string
	DataDir string
	Args    []string    // more maincontrol flags
	TLS     *tls.Config // for the readiness check when Args turn TLS on
	Ready   time.Duration
}

// MainControl is a main control child process. Its CPU and memory are read
// from /proc. Every method is safe to call from one goroutine at a time.
type MainControl struct {
	Addr    string
	DataDir string // "" when persistence is off
	// HTTP is its /metrics address, "" when the extra flags set their own.
	HTTP string

	opts    MainControlOptions
	ownDir  bool
	cmd     *exec.Cmd
	exited  chan struct{}
	stderr  *tailBuffer
	started time.Time
}

// DefaultBinary finds the apollo11 binary the harness starts.
// It takes the one beside this executable, else the one on PATH.
func DefaultBinary() (string, error) {
	if exe, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(exe), "apollo11")
		if st, err := os.Stat(beside); err == nil && st.Mode().IsRegular() {
			return beside, nil
		}
	}
	if bin, err := exec.LookPath("apollo11"); err == nil {
		return bin, nil
	}
	return "", errors.New("cannot find the apollo11 binary beside this one or on PATH: give --binary (go build -o apollo11 ./cmd/apollo11)")
}

// StartMainControl starts `apollo11 maincontrol` on a free loopback port and
// waits until it says welcome.
func StartMainControl(ctx context.Context, o MainControlOptions) (*MainControl, error) {
	if o.Binary == "" {
		bin, err := DefaultBinary()
		if err != nil {
			return nil, err
		}
		o.Binary = bin
	}
	if o.Ready == 0 {
		o.Ready = 2 * time.Minute
	}
	if o.Fsync == "" {
		o.Fsync = "off"
	}
	m := &MainControl{opts: o, DataDir: o.DataDir}
	if o.Fsync != "off" && m.DataDir == "" {
		dir, err := os.MkdirTemp("", "apollo11-bench-")
		if err != nil {
			return nil, err
		}
		m.DataDir, m.ownDir = dir, true
	}
	addr, err := FreeAddr()
	if err != nil {
		m.removeDir()
		return nil, err
	}
	m.Addr = addr
	if _, err := m.Start(ctx); err != nil {
		m.removeDir()
		return nil, err
	}
	return m, nil
}

// loadTokenFile reads the shared token of a scenario that starts its own main control.
// It returns it with the flags that make that main control require it.
// With --token-file the scenario measures a main control with auth on.
// Each of its connections then proves the token. "" is auth off.
func loadTokenFile(path string) (token []byte, mcArgs []string, err error) {
	if path == "" {
		return nil, nil, nil
	}
	if token, err = auth.LoadToken(path); err != nil {
		return nil, nil, err
	}
	return token, []string{"--token-file", path}, nil
}

// FreeAddr returns a loopback address whose port was free a moment ago.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// Start starts the process, or starts it again after Stop or Kill.
// A restart uses the same address and data dir.
// It returns how long it took until the listener answered with a welcome.
func (m *MainControl) Start(ctx context.Context) (time.Duration, error) {
	fsync := m.opts.Fsync
	if fsync == "off" {
		fsync = "never"
	}
	args := append([]string{"maincontrol", "--listen", m.Addr, "--data-dir", m.DataDir, "--fsync", fsync,
		"--log-level", "warn"}, m.opts.Args...)
	if m.HTTP == "" && !slices.ContainsFunc(m.opts.Args, func(a string) bool { return strings.HasPrefix(a, "--http-listen") }) {
		addr, err := FreeAddr()
		if err != nil {
			return 0, err
		}
		m.HTTP = addr
	}
	if m.HTTP != "" {
		args = append(args, "--http-listen", m.HTTP)
	}
	cmd := exec.Command(m.opts.Binary, args...)
	cmd.Env = childEnv()
	m.stderr = &tailBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = m.stderr, m.stderr
	// Its own process group keeps a terminal's Ctrl-C away from it.
	// The harness stops it itself. Pdeathsig kills it if the harness dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	m.started = time.Now()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("cannot start %s: %w", m.opts.Binary, err)
	}
	m.cmd = cmd
	m.exited = make(chan struct{})
	go func() { _ = cmd.Wait(); close(m.exited) }()
	took, err := m.waitReady(ctx)
	if err != nil {
		m.Kill()
		return 0, err
	}
	return took, nil
}

// waitReady polls until a connection reads a welcome.
func (m *MainControl) waitReady(ctx context.Context) (time.Duration, error) {
	deadline := time.Now().Add(m.opts.Ready)
	for {
		if fc, _, err := dialWelcome(m.Addr, m.opts.TLS, time.Second); err == nil {
			took := time.Since(m.started)
			fc.c.Close()
			return took, nil
		}
		select {
		case <-m.exited:
			return 0, fmt.Errorf("main control exited during startup: %s", m.stderr.String())
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("main control did not answer in %s: %s", m.opts.Ready, m.stderr.String())
		}
	}
}

// PID returns the process id (0 when not running).
func (m *MainControl) PID() int {
	if m.cmd == nil || m.cmd.Process == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// Stderr returns the last 64 KiB the process wrote.
func (m *MainControl) Stderr() string { return m.stderr.String() }

// Stop sends SIGTERM and waits for a graceful stop, with SIGKILL after 60 s.
// It returns how long the stop took.
func (m *MainControl) Stop() (time.Duration, error) {
	if m.cmd == nil {
		return 0, nil
	}
	start := time.Now()
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(time.Minute):
		m.Kill()
		return time.Since(start), errors.New("main control did not stop in 60 s after SIGTERM: killed")
	}
	took := time.Since(start)
	err := exitErr(m.cmd)
	m.cmd = nil
	return took, err
}

// Kill sends SIGKILL and waits for the process to go.
func (m *MainControl) Kill() {
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Kill()
	<-m.exited
	m.cmd = nil
}

// Close stops the process if it still runs and removes a temp data dir.
func (m *MainControl) Close() error {
	var err error
	if m.cmd != nil {
		_, err = m.Stop()
	}
	m.removeDir()
	return err
}

func (m *MainControl) removeDir() {
	if m.ownDir {
		_ = os.RemoveAll(m.DataDir)
		m.ownDir = false
	}
}

// exitErr returns nil for a clean exit of an already waited command.
func exitErr(cmd *exec.Cmd) error {
	if cmd.ProcessState == nil || cmd.ProcessState.Success() {
		return nil
	}
	return fmt.Errorf("main control exited with %s", cmd.ProcessState)
}

// childEnv is this process's environment without APOLLO11_* variables.
// A main control or executor started for a run gets exactly the flags the harness gives it.
// It must not get settings meant for a production one.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "APOLLO11_") {
			env = append(env, kv)
		}
	}
	return env
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

package main_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/internal/testbin"
)

// A load run whose main control is killed stops at once, not after
// --drain, says the connections were lost and that the process at --pid
// exited, and exits 1.
func TestBench_TargetKilled(t *testing.T) {
	bin, harness := testbin.Build(t), testbin.BuildBench(t)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", "")
	b := testbin.Start(t, harness, nil, "--addr", mc.Addr, "--pid", strconv.Itoa(mc.Cmd.Process.Pid),
		"--rate", "500", "--duration", "20s", "--executors", "2", "--progress=false")
	// Kill once the run is under way (tasks done), not after a guess at
	// how long a loaded machine takes to start it.
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		cl, err := client.Dial(ctx, mc.Addr, client.Options{})
		if err != nil {
			return false
		}
		defer cl.Close()
		st, err := cl.Stats(ctx)
		return err == nil && st.Tasks["succeeded"] > 0
	}, 15*time.Second, 50*time.Millisecond, "the run did not start:\n%s", b.Output())
	require.False(t, b.Exited(), "the run ended before the kill:\n%s", b.Output())
	mc.Kill()
	killed := time.Now()
	require.NoError(t, waitExit(b, 10*time.Second), "still running after the kill (--drain is 30 s):\n%s", b.Output())
	assert.Less(t, time.Since(killed), 5*time.Second, "stops promptly")
	out := b.Output()
	assert.Equal(t, 1, b.ExitCode(), out)
	assert.Contains(t, out, "CONNECTIONS 6 of 6 lost during the run; first:", out)
	assert.Contains(t, out, "lost 6 of 6 connections to the main control", out)
	assert.Regexp(t, `(closed|reset) by the main control`, out)
	assert.Contains(t, out, "the process at --pid "+strconv.Itoa(mc.Cmd.Process.Pid)+" exited during the run", out)
	assert.NotContains(t, out, "pass --pid", out)
	assert.NotContains(t, out, "unfinished", "not the drain's message", out)
}

// waitExit waits for p to exit, whatever its code.
func waitExit(p *testbin.Proc, timeout time.Duration) error {
	err := p.Wait(timeout)
	if p.Exited() {
		return nil
	}
	return err
}

// A bench value that cannot mean what was typed is a bad command line
// (exit 2), checked before anything starts: zeros are not read as "the
// default", and flags that a mode would ignore are refused.
func TestBench_BadCommandLines(t *testing.T) {
	nowhere := "127.0.0.1:1"
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"pending", "--tasks", "0"}, "--tasks 0: must be more than 0"},
		{[]string{"pending", "--tasks", "-5"}, "--tasks -5: must be more than 0"},
		{[]string{"pending", "--producers", "0"}, "--producers 0: must be more than 0"},
		{[]string{"pending", "--payload", "-1"}, "--payload -1: want 0 or more"},
		{[]string{"idle", "--executors", "0"}, "--executors 0: must be more than 0"},
		{[]string{"idle", "--dialers", "0"}, "--dialers 0: must be more than 0"},
		{[]string{"idle", "--hold", "0s"}, "--hold 0s: must be more than 0"},
		{[]string{"idle", "--fsync", "always"}, "flag provided but not defined: -fsync"},
		{[]string{"failover", "--fsync", "always"}, "flag provided but not defined: -fsync"},
		{[]string{"--tasks", "10", "--producers", "0", "--addr", nowhere}, "--producers 0: must be more than 0"},
		{[]string{"--tasks", "10", "--slots", "0", "--addr", nowhere}, "--slots 0: must be more than 0"},
		{[]string{"--tasks", "10", "--window", "0", "--addr", nowhere}, "--window 0: must be more than 0"},
		{[]string{"--tasks", "10", "--executors", "-1", "--addr", nowhere}, "--executors -1: want 0 (none) or more"},
		{[]string{"--tasks", "-1", "--addr", nowhere}, "--tasks -1: want 1 or more"},
		{[]string{"--tasks", "5000", "--duration", "1s", "--addr", nowhere}, "--tasks 5000 and --duration 1s: give one of them"},
		{[]string{"--tasks", "10", "--fsync", "always", "--addr", nowhere}, "--fsync, --dir and --maincontrol-args set up a main control the harness starts"},
		{[]string{"--tasks", "10", "--dir", "/tmp/x", "--addr", nowhere}, "drop them with --addr"},
		{[]string{"--tasks", "10", "--maincontrol-args", "--max-frame 2048", "--addr", nowhere}, "drop them with --addr"},
		{[]string{"wire", "--rate", "0", "--addr", nowhere}, "--rate 0: want probes per second"},
		{[]string{"wire", "--rate", "-3", "--addr", nowhere}, "--rate -3: want probes per second"},
		{[]string{"wire", "--concurrency", "0", "--addr", nowhere}, "--concurrency 0: want 1 or more"},
		{[]string{"wire", "--concurrency", "-1", "--addr", nowhere}, "--concurrency -1: want 1 or more"},
		{[]string{"wire", "--duration", "0s", "--addr", nowhere}, "--duration 0s: must be more than 0"},
		{[]string{"wire", "--timeout", "0s", "--addr", nowhere}, "--timeout 0s: must be more than 0"},
		{[]string{"wire", "--fsync", "always", "--addr", nowhere}, "--fsync and --maincontrol-args set up a main control the harness starts"},
		{[]string{"stalls", "--threads", "0"}, "--threads 0: must be more than 0"},
		{[]string{"stalls", "--threshold", "0s"}, "--threshold 0s: must be more than 0"},
		{[]string{"stalls", "--duration", "-1s"}, "--duration -1s: must be more than 0"},
		{[]string{"failover", "--victim", "foo"}, `--victim "foo": want raw or process`},
		{[]string{"failover", "--rounds", "0"}, "--rounds 0: must be more than 0"},
		{[]string{"failover", "--heartbeat-timeout", "0s"}, "--heartbeat-timeout 0s: must be more than 0"},
		{[]string{"flood", "--flooders", "0"}, "--flooders 0: must be more than 0"},
		{[]string{"flood", "--window", "0"}, "--window 0: must be more than 0"},
		{[]string{"flood", "--duration", "0s"}, "--duration 0s: must be more than 0"},
		{[]string{"flood", "--alone", "0s"}, "--alone 0s: must be more than 0"},
		{[]string{"flood", "--witness-interval", "-1ms"}, "--witness-interval -1ms: must be more than 0"},
		{[]string{"flood", "--request", "submit"}, `--request "submit": want stats or state_get`},
		{[]string{"flood", "--procs", "-1"}, "--procs -1: want 0 (Go's default) or more"},
		{[]string{"--tasks", "10", "--procs", "-1", "--addr", nowhere}, "--procs -1: want 0 (Go's default) or more"},
		{[]string{"flood", "--maincontrol-args", "--max-frame 2048", "--addr", nowhere}, "--maincontrol-args sets up a main control the harness starts"},
		{[]string{"flood", "--pid", "1"}, "--pid is for a main control at --addr"},
		{[]string{"flood", "--fsync", "always"}, "flag provided but not defined: -fsync"},
	}
	harness := testbin.BuildBench(t)
	for _, tc := range tests {
		cmd := exec.Command(harness, append(tc.args, "--progress=false")...)
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%v: %s", tc.args, errOut.String())
		assert.Equal(t, 2, ee.ExitCode(), "%v: %s", tc.args, errOut.String())
		assert.Contains(t, errOut.String(), tc.msg, "%v", tc.args)
	}
}

// idle, pending, failover and flood take --token-file: the main control
// they start requires the token, and their executors and clients prove
// it. The main control here is also given the token through
// --maincontrol-args, so that a scenario whose connections do not sign
// fails instead of passing against a main control without auth. Each run
// ends with its report and exit 0.
//
// No --binary: the harness starts the apollo11 built beside it, and
// failover's raw victim is the harness itself.
func TestBench_OwnMainControlTokenFile(t *testing.T) {
	harness := testbin.BuildBench(t)
	tok := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tok, []byte("0123456789abcdef0123456789abcdef\n"), 0o600))
	for _, args := range [][]string{
		{"idle", "--executors", "3", "--dialers", "2", "--hold", "200ms"},
		{"pending", "--tasks", "50", "--producers", "1"},
		{"failover", "--rounds", "1", "--heartbeat-timeout", "1s"},
		{"flood", "--flooders", "2", "--duration", "1s", "--alone", "200ms"},
	} {
		cmd := exec.Command(harness, append(args, "--token-file", tok,
			"--maincontrol-args", "--token-file "+tok, "--progress=false")...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%v:\n%s", args, out)
		assert.Contains(t, string(out), "apollo11-bench "+args[0]+":", "%v: the report", args)
	}
}

// Ctrl-C during bench stalls, idle or flood prints the report of the
// part that ran, marked as such, as bench and bench wire do.
func TestBench_InterruptedReports(t *testing.T) {
	bin, harness := testbin.Build(t), testbin.BuildBench(t)
	// Each is interrupted once under way, which is polled for, not
	// guessed: stalls once its threads spin, idle once its executors hold
	// (and once they connect).
	stalls := testbin.Start(t, harness, nil, "stalls", "--duration", "60s", "--threads", "1", "--progress=true")
	require.Eventually(t, func() bool { return strings.Contains(stalls.Output(), "spinning") || stalls.Exited() },
		15*time.Second, 20*time.Millisecond, stalls.Output())
	interrupted(t, stalls, "INTERRUPTED: the figures cover the part that ran")

	// idle starts its own main control (it reads its memory): its
	// progress bar names the hold once the executors are connected.
	idle := testbin.Start(t, harness, nil, "idle", "--binary", bin, "--executors", "3", "--dialers", "1", "--hold", "60s", "--progress=true")
	require.Eventually(t, func() bool { return strings.Contains(idle.Output(), "idle ") || idle.Exited() },
		30*time.Second, 20*time.Millisecond, idle.Output())
	interrupted(t, idle, "INTERRUPTED: the hold was cut short")

	// idle again, interrupted while its executors still connect (5,000
	// through one dialer take seconds): it reports those registered.
	connecting := testbin.Start(t, harness, nil, "idle", "--binary", bin, "--executors", "5000", "--dialers", "1", "--hold", "60s", "--progress=true")
	require.Eventually(t, func() bool { return strings.Contains(connecting.Output(), "connect ") || connecting.Exited() },
		30*time.Second, 20*time.Millisecond, connecting.Output())
	interrupted(t, connecting, "INTERRUPTED while connecting")

	// flood, once its progress bar names the flood (after the witness
	// alone).
	flood := testbin.Start(t, harness, nil, "flood", "--binary", bin, "--flooders", "2", "--alone", "100ms",
		"--duration", "60s", "--progress=true")
	require.Eventually(t, func() bool { return strings.Contains(flood.Output(), "flood [") || flood.Exited() },
		30*time.Second, 20*time.Millisecond, flood.Output())
	interrupted(t, flood, "INTERRUPTED: the figures cover the part that ran")
}

// interrupted sends p a Ctrl-C and checks it reports want and exits non-zero.
func interrupted(t *testing.T, p *testbin.Proc, want string) {
	t.Helper()
	p.Signal(syscall.SIGINT)
	require.NoError(t, waitExit(p, 20*time.Second), p.Output())
	assert.Contains(t, p.Output(), want)
	assert.NotEqual(t, 0, p.ExitCode(), p.Output())
}

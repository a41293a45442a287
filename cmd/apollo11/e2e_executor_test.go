package main_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/internal/testbin"
)

func TestExecutorDaemon_DrainThenBye(t *testing.T) {
	bin := testbin.Build(t)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", "", "--heartbeat-timeout", "30s")
	// The first task runs until the test opens its gate, after the drain
	// began. A timed task could end before the signal on a busy machine.
	gate := filepath.Join(t.TempDir(), "gate")
	ex := startExecutor(t, bin, mc.Addr, "--id", "drain-1", "--types", "exec",
		"--allow-exec", "--exec-allow", "/bin/sh", "--drain-timeout", "10m")
	short := submitID(t, bin, mc.Addr, "--type", "exec", "--arg", "argv.0=/bin/sh", "--arg", "argv.1=-c",
		"--arg", "argv.2=until [ -e "+gate+" ]; do sleep 0.02; done")
	waitState(t, bin, mc.Addr, short, "running")
	ex.Signal(syscall.SIGTERM)
	require.Eventually(t, func() bool { return strings.Contains(ex.Output(), "msg=draining") },
		patience.Scale(10*time.Second), 10*time.Millisecond, "no drain began\n%s", ex.Output())
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	waitState(t, bin, mc.Addr, short, "succeeded") // finished within the drain
	require.NoError(t, ex.Wait(patience.Scale(10*time.Second)), "graceful stop exits 0\n%s", ex.Output())
	assert.Contains(t, ex.Output(), "bye")

	// A task longer than the drain: cancelled by the executor, then bye,
	// and the main control re-queues it at once (no 30 s heartbeat wait).
	ex = startExecutor(t, bin, mc.Addr, "--id", "drain-2", "--types", "sleep", "--drain-timeout", "200ms")
	long := submitID(t, bin, mc.Addr, "--type", "sleep", "--arg", "ms=60000")
	waitState(t, bin, mc.Addr, long, "running")
	ex.Signal(syscall.SIGTERM)
	require.NoError(t, ex.Wait(patience.Scale(10*time.Second)), "%s", ex.Output())
	st := waitState(t, bin, mc.Addr, long, "pending")
	assert.EqualValues(t, 1, st["attempt"], "bye used the attempt")
}

func TestExecutorDaemon_ReconnectsAfterMainControlRestart(t *testing.T) {
	bin := testbin.Build(t)
	dir := t.TempDir()
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", dir)
	ex := startExecutor(t, bin, mc.Addr, "--id", "re-1", "--types", "echo")
	_, _, code := cli(t, bin, mc.Addr, "submit", "--type", "echo", "--wait")
	require.Equal(t, 0, code)
	mc.Signal(syscall.SIGTERM)
	require.NoError(t, mc.Wait(20*time.Second))
	mc2 := testbin.Start(t, bin, nil, "maincontrol", "--listen", mc.Addr, "--data-dir", dir)
	require.NoError(t, testbin.WaitWelcome(mc.Addr, 20*time.Second, nil), mc2.Output())
	out, errOut, code := cli(t, bin, mc.Addr, "submit", "--type", "echo", "--arg", "a=b", "--wait", "--wait-timeout", "20s")
	require.Equal(t, 0, code, "%s%s\nexecutor:\n%s", out, errOut, ex.Output())
	assert.Contains(t, out, "out.a=b")
}

// An executor asked to run exec without --allow-exec does not start: it
// would take exec tasks and fail every one, for good.
func TestExecutorDaemon_ExecNotAllowed(t *testing.T) {
	bin := testbin.Build(t)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", "")
	ex := testbin.Start(t, bin, nil, "executor", "--connect", mc.Addr, "--id", "noexec", "--types", "echo,exec")
	_ = ex.Wait(20 * time.Second)
	require.True(t, ex.Exited(), "the executor should exit at once")
	assert.Equal(t, 2, ex.ExitCode(), "a bad command line")
	assert.Contains(t, ex.Output(), "--types exec needs --allow-exec")
}

func TestExecutorDaemon_ExecAllowedAndCancel(t *testing.T) {
	bin := testbin.Build(t)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", "")
	startExecutor(t, bin, mc.Addr, "--id", "exec-1", "--types", "exec,sleep", "--slots", "2",
		"--allow-exec", "--exec-allow", "/bin/echo,/bin/sh")
	out, errOut, code := cli(t, bin, mc.Addr, "submit", "--type", "exec", "--arg", "argv=/bin/echo hi there", "--wait")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `out.stdout="hi there\n"`+"\n", "quoted: the output's newline is not a line of the listing")
	assert.Contains(t, out, "out.exit_code=0")

	out, _, code = cli(t, bin, mc.Addr, "submit", "--type", "exec", "--arg", "argv=/bin/ls /", "--wait")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "not on the --exec-allow list")

	// cancel kills the whole process group, grandchildren included.
	pidFile := filepath.Join(t.TempDir(), "pid")
	id := submitID(t, bin, mc.Addr, "--type", "exec", "--arg", "argv.0=/bin/sh", "--arg", "argv.1=-c",
		"--arg", "argv.2=sleep 60 & echo $! > "+pidFile+"; wait")
	waitState(t, bin, mc.Addr, id, "running")
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, syscall.Kill(pid, 0), "grandchild runs")
	_, _, code = cli(t, bin, mc.Addr, "cancel", strconv.FormatUint(id, 10))
	require.Equal(t, 0, code)
	assert.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 5*time.Second, 20*time.Millisecond,
		"the grandchild %d was killed with its group", pid)

	// A hung task hits its timeout.
	out, _, code = cli(t, bin, mc.Addr, "submit", "--type", "sleep", "--arg", "ms=60000", "--timeout", "300ms",
		"--max-attempts", "1", "--wait")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "timeout")
}

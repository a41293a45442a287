package main_test

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
)

// SIGHUP (the terminal or ssh session that started a daemon closed, or a
// habitual `kill -HUP`) is a graceful stop, exactly like SIGTERM: before,
// Go's default ended both daemons at once with status 129, with no
// snapshot, no drain and no bye.
func TestSIGHUP_GracefulStop(t *testing.T) {
	bin := testbin.Build(t)
	dir := t.TempDir()
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", dir, "--heartbeat-timeout", "30s")

	// The executor: a running task longer than the drain is cancelled,
	// then bye, and the main control re-queues it at once (no 30 s
	// heartbeat timeout).
	ex := startExecutor(t, bin, mc.Addr, "--id", "hup-1", "--types", "sleep", "--drain-timeout", "200ms")
	long := submitID(t, bin, mc.Addr, "--type", "sleep", "--arg", "ms=60000")
	waitState(t, bin, mc.Addr, long, "running")
	ex.Signal(syscall.SIGHUP)
	require.NoError(t, ex.Wait(10*time.Second), "SIGHUP: graceful stop exits 0\n%s", ex.Output())
	assert.Contains(t, ex.Output(), "stopping: draining running tasks")
	assert.Contains(t, ex.Output(), "bye")
	st := waitState(t, bin, mc.Addr, long, "pending")
	assert.EqualValues(t, 1, st["attempt"], "bye used the attempt")

	// The main control: "stopping", a snapshot, exit 0.
	mc.Signal(syscall.SIGHUP)
	require.NoError(t, mc.Wait(20*time.Second), "SIGHUP: graceful stop exits 0\n%s", mc.Output())
	assert.Contains(t, mc.Output(), "stopping: answering what is in flight")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var snapshots int
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "snapshot-") {
			snapshots++
		}
	}
	assert.NotZero(t, snapshots, "the graceful stop writes a snapshot; files: %v", entries)
}

// dev stops its executors and its main control on SIGHUP, like on SIGTERM.
func TestSIGHUP_Dev(t *testing.T) {
	bin := testbin.Build(t)
	addr := testbin.FreeAddr(t)
	dev := testbin.Start(t, bin, nil, "dev", "--listen", addr, "--data-dir", t.TempDir())
	require.NoError(t, testbin.WaitWelcome(addr, 20*time.Second, nil), dev.Output())
	dev.Signal(syscall.SIGHUP)
	require.NoError(t, dev.Wait(10*time.Second), "SIGHUP: graceful stop exits 0\n%s", dev.Output())
	assert.Contains(t, dev.Output(), "stopping: answering what is in flight")
}

// A daemon started with SIGHUP ignored (nohup) keeps ignoring it: catching
// it would stop the state authority at logout, as nohup was there to
// prevent. And a closing terminal's SIGHUPs come more than once: a second
// one neither cuts the executor's drain short nor kills dev's stop.
func TestSIGHUP_NohupAndRepeats(t *testing.T) {
	bin := testbin.Build(t)
	nohup := func(args ...string) *testbin.Proc {
		return testbin.Start(t, "/bin/sh", nil, append([]string{"-c", `trap '' HUP && exec "$0" "$@"`, bin}, args...)...)
	}
	addr := testbin.FreeAddr(t)
	mc := nohup("maincontrol", "--listen", addr, "--data-dir", t.TempDir())
	require.NoError(t, testbin.WaitWelcome(addr, 20*time.Second, nil), mc.Output())
	mc.Signal(syscall.SIGHUP)
	time.Sleep(300 * time.Millisecond)
	require.False(t, mc.Exited(), "nohup: SIGHUP stopped the main control\n%s", mc.Output())
	assert.NotContains(t, mc.Output(), "stopping")

	// Two SIGHUPs to an executor draining a running task: the drain runs
	// its course (bye after the drain timeout), no hard stop.
	ex := startExecutor(t, bin, addr, "--id", "hup-2", "--types", "sleep", "--drain-timeout", "1s")
	long := submitID(t, bin, addr, "--type", "sleep", "--arg", "ms=60000")
	waitState(t, bin, addr, long, "running")
	ex.Signal(syscall.SIGHUP)
	time.Sleep(100 * time.Millisecond)
	ex.Signal(syscall.SIGHUP)
	require.NoError(t, ex.Wait(10*time.Second), ex.Output())
	assert.NotContains(t, ex.Output(), "stopping at once")

	// dev: a second SIGHUP during the stop does not kill it.
	devAddr := testbin.FreeAddr(t)
	dev := testbin.Start(t, bin, nil, "dev", "--listen", devAddr, "--data-dir", t.TempDir())
	require.NoError(t, testbin.WaitWelcome(devAddr, 20*time.Second, nil), dev.Output())
	dev.Signal(syscall.SIGHUP)
	time.Sleep(50 * time.Millisecond)
	dev.Signal(syscall.SIGHUP)
	require.NoError(t, dev.Wait(20*time.Second), "a second SIGHUP killed dev's stop\n%s", dev.Output())
	assert.Contains(t, dev.Output(), "stopping: answering what is in flight")

	mc.Signal(syscall.SIGTERM)
	require.NoError(t, mc.Wait(20*time.Second), mc.Output())
}

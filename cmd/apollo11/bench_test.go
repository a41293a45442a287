package main_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
)

// A load run whose main control is killed stops at once, not after
// --drain, says the connections were lost and that the process at --pid
// exited, and exits 1.
func TestBench_TargetKilled(t *testing.T) {
	bin := testbin.Build(t)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", "")
	b := testbin.Start(t, bin, nil, "bench", "--addr", mc.Addr, "--pid", strconv.Itoa(mc.Cmd.Process.Pid),
		"--rate", "500", "--duration", "20s", "--executors", "2", "--progress=false")
	time.Sleep(time.Second)
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

package main_test

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
)

// A second SIGINT stops dev at once, as README says, also when dev was
// started with SIGINT ignored, as a script's `apollo11 dev &` is: there
// the first SIGINT started the drain and the second did nothing (os/signal
// gave SIGINT back the action it had at start, ignored), so dev went on
// for the whole drain.
func TestDev_SecondSIGINTStopsAtOnce(t *testing.T) {
	bin := testbin.Build(t)
	tests := []struct {
		name string
		args func(addr, dir string) (string, []string)
		// exited130 says the status must be exit 130; otherwise being
		// killed by SIGINT is right too (the test's own SIGINT may be
		// ignored, and dev's with it).
		exited130 bool
	}{
		{name: "SIGINT as inherited", args: func(addr, dir string) (string, []string) {
			return bin, []string{"dev", "--listen", addr, "--data-dir", dir}
		}},
		{name: "SIGINT ignored at start", exited130: true, args: func(addr, dir string) (string, []string) {
			return "/bin/sh", []string{"-c", `trap '' INT && exec "$0" "$@"`, bin, "dev", "--listen", addr, "--data-dir", dir}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := testbin.FreeAddr(t)
			prog, args := tc.args(addr, t.TempDir())
			dev := testbin.Start(t, prog, nil, args...)
			require.NoError(t, testbin.WaitWelcome(addr, 20*time.Second, nil), dev.Output())
			// A running task holds the graceful stop for dev's 5 s drain.
			long := submitID(t, bin, addr, "--type", "sleep", "--arg", "ms=60000")
			waitState(t, bin, addr, long, "running")

			dev.Signal(syscall.SIGINT)
			time.Sleep(300 * time.Millisecond)
			require.False(t, dev.Exited(), "the first SIGINT is the graceful stop, which drains\n%s", dev.Output())
			dev.Signal(syscall.SIGINT)
			err := dev.Wait(3 * time.Second)
			require.True(t, dev.Exited(), "the second SIGINT did not stop dev at once: %v\n%s", err, dev.Output())
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "want a stop at once, not a clean exit: %v", err)
			ws := ee.Sys().(syscall.WaitStatus)
			if tc.exited130 || !ws.Signaled() {
				assert.Equal(t, 130, ws.ExitStatus(), "%v", err)
			} else {
				assert.Equal(t, syscall.SIGINT, ws.Signal(), "%v", err)
			}
		})
	}
}

package builtin_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/executor/builtin"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
)

// Output within --exec-max-output can still make a result too large for
// max_frame (two streams, escaping doubles `=`): exec cuts the streams to
// fit, with their *_truncated flags, so that a program that ran keeps its
// status and exit code, rather than the whole result being replaced with
// a permanent "result too large" (or refused by the main control, whose
// check is stricter).
func TestExec_ResultFitsMaxFrame(t *testing.T) {
	mustExist(t, "/bin/sh")
	const maxFrame = 65536
	addr, _ := maincontroltest.Start(t, maincontrol.Config{Core: core.Config{MaxFrame: maxFrame}})
	ex, err := executor.New(executor.Config{Addr: addr, ID: "exec-frame", Slots: 1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Handlers: map[string]executor.Handler{"exec": builtin.Exec(builtin.ExecConfig{
			Enabled: true, Allow: []string{"/bin/sh"}})}}) // MaxOutput: 64 KiB a stream
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- ex.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-runDone)
	}()
	cl, err := client.Dial(context.Background(), addr, client.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer cl.Close()

	const both = "head -c 40000 /dev/zero | tr '\\0' a; head -c 40000 /dev/zero | tr '\\0' b >&2"
	tests := []struct {
		name, script         string
		state, exitCode, err string
		outCut, errCut       bool
	}{
		{"two streams", both, "succeeded", "0", "", true, true},
		{"two streams, exit 3", both + "; exit 3", "failed", "3", "exit status 3", true, true},
		{"escaping doubles", "head -c 40000 /dev/zero | tr '\\0' =", "succeeded", "0", "", true, false},
		{"within the frame", "head -c 20000 /dev/zero | tr '\\0' a", "succeeded", "0", "", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer wcancel()
			_, done, err := cl.SubmitWait(wctx, client.SubmitRequest{Type: "exec", MaxAttempts: 1,
				Args: map[string]string{"argv.0": "/bin/sh", "argv.1": "-c", "argv.2": tc.script}})
			require.NoError(t, err)
			assert.Equal(t, tc.state, done.State, "error %q", done.Error)
			assert.Equal(t, tc.err, done.Error)
			assert.Equal(t, tc.exitCode, done.Out["exit_code"])
			assert.Equal(t, tc.outCut, done.Out["stdout_truncated"] == "true")
			assert.Equal(t, tc.errCut, done.Out["stderr_truncated"] == "true")
			assert.NotEmpty(t, done.Out["stdout"], "as much as fits is kept")
			assert.Equal(t, strings.Repeat(done.Out["stdout"][:1], len(done.Out["stdout"])), done.Out["stdout"])
			if tc.outCut && tc.errCut {
				assert.Greater(t, len(done.Out["stderr"]), 20000, "each stream gets half the room")
				assert.Greater(t, len(done.Out["stdout"]), 20000)
			}
		})
	}
}

package executor_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
)

// realMainControl runs an in-memory main control for the test.
func realMainControl(t *testing.T) string {
	t.Helper()
	addr, _ := maincontroltest.Start(t, maincontrol.Config{})
	return addr
}

// TestExecutor_AgainstRealMainControl runs the library against the real
// main control: a task flow with outputs and shared state, a handler that
// panics, progress, and fresh shared state read from a handler.
func TestExecutor_AgainstRealMainControl(t *testing.T) {
	addr := realMainControl(t)
	handlers := map[string]executor.Handler{
		"count": executor.HandlerFunc(func(ctx context.Context, task *executor.Task) (executor.Result, error) {
			if err := task.Progress(50, "half way"); err != nil {
				return executor.Result{}, err
			}
			return executor.Result{Out: map[string]string{"seen": task.Args["x"]}, Add: map[string]int64{"n": 2}}, nil
		}),
		"read": executor.HandlerFunc(func(ctx context.Context, task *executor.Task) (executor.Result, error) {
			st, ver, err := task.State(ctx, "n")
			if err != nil {
				return executor.Result{}, err
			}
			return executor.Result{Out: map[string]string{"n": st["n"], "ver": strconv.FormatUint(ver, 10)}}, nil
		}),
		"boom": executor.HandlerFunc(func(context.Context, *executor.Task) (executor.Result, error) {
			panic("kaboom")
		}),
	}
	ex, err := executor.New(executor.Config{Addr: addr, ID: "int-1", Handlers: handlers, Slots: 2,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- ex.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-runDone)
	}()

	cl, err := client.Dial(context.Background(), addr, client.Options{})
	require.NoError(t, err)
	defer cl.Close()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()

	_, done, err := cl.SubmitWait(wctx, client.SubmitRequest{Type: "count", Args: map[string]string{"x": "7"}})
	require.NoError(t, err)
	assert.Equal(t, "succeeded", done.State)
	assert.Equal(t, "7", done.Out["seen"])

	_, done, err = cl.SubmitWait(wctx, client.SubmitRequest{Type: "read"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"n": "2", "ver": "1"}, done.Out, "the handler read the fresh shared state")

	_, done, err = cl.SubmitWait(wctx, client.SubmitRequest{Type: "boom", MaxAttempts: 3})
	require.NoError(t, err)
	assert.Equal(t, "failed", done.State, "a panic is a permanent failure: no retry")
	assert.Equal(t, "panic: kaboom", done.Error)
	st, err := cl.Query(wctx, done.ID)
	require.NoError(t, err)
	assert.EqualValues(t, 1, st.Attempt)

	vals, ver, err := cl.StateGet(wctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"n": "2"}, vals)
	assert.EqualValues(t, 1, ver)
}

package executor_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/executor"
)

// TestExecutor_ChangeTypesAgainstRealMainControl adds and drops task types
// on a live connection: an added type's pending task runs at once, a
// dropped type's running task finishes and is accepted, and a new task of
// the dropped type is not dispatched here; the progress it sent shows in
// query while it runs.
func TestExecutor_ChangeTypesAgainstRealMainControl(t *testing.T) {
	addr := realMainControl(t)
	release := make(chan struct{})
	progressed := make(chan struct{})
	handlers := map[string]executor.Handler{
		"old": executor.HandlerFunc(func(ctx context.Context, task *executor.Task) (executor.Result, error) {
			if err := task.Progress(30, "holding"); err != nil {
				return executor.Result{}, err
			}
			close(progressed)
			select {
			case <-release:
				return executor.Result{Out: map[string]string{"by": "old"}}, nil
			case <-ctx.Done():
				return executor.Result{}, ctx.Err()
			}
		}),
	}
	ex, err := executor.New(executor.Config{Addr: addr, ID: "types-1", Handlers: handlers, Slots: 4,
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
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()

	running, err := cl.Submit(wctx, client.SubmitRequest{Type: "old"})
	require.NoError(t, err)
	<-progressed
	require.Eventually(t, func() bool {
		st, err := cl.Query(wctx, running.ID)
		return err == nil && st.Progress != nil && *st.Progress == 30 && st.ProgressNote == "holding"
	}, 10*time.Second, 10*time.Millisecond, "query shows the progress")
	waiting, err := cl.Submit(wctx, client.SubmitRequest{Type: "new"})
	require.NoError(t, err)

	echo := executor.HandlerFunc(func(ctx context.Context, task *executor.Task) (executor.Result, error) {
		return executor.Result{Out: map[string]string{"by": "new"}}, nil
	})
	require.NoError(t, ex.ChangeTypes(wctx, map[string]executor.Handler{"new": echo}, "old"))
	assert.Equal(t, []string{"new"}, ex.TaskTypes())

	ended := func(id uint64) client.TaskState {
		var st client.TaskState
		require.Eventually(t, func() bool {
			var err error
			st, err = cl.Query(wctx, id)
			return err == nil && (st.State == "succeeded" || st.State == "failed" || st.State == "cancelled")
		}, 20*time.Second, 10*time.Millisecond)
		return st
	}
	done := ended(waiting.ID)
	assert.Equal(t, "succeeded", done.State)
	assert.Equal(t, "new", done.Out["by"])

	// The dropped type's running task finishes and its result is taken.
	close(release)
	st := ended(running.ID)
	assert.Equal(t, "succeeded", st.State)
	assert.Equal(t, "old", st.Out["by"])
	assert.NotNil(t, st.RunMs, "an ended task shows its run time")
	assert.Nil(t, st.Progress)

	// A new task of the dropped type waits: no executor takes it.
	later, err := cl.Submit(wctx, client.SubmitRequest{Type: "old"})
	require.NoError(t, err)
	types, err := cl.TypeListAll(func() (context.Context, context.CancelFunc) { return context.WithTimeout(wctx, 5*time.Second) })
	require.NoError(t, err)
	byName := map[string]client.TypeInfo{}
	for _, ti := range types {
		byName[ti.Name] = ti
	}
	assert.Equal(t, uint64(1), byName["old"].Pending)
	assert.Equal(t, uint64(0), byName["old"].Executors)
	assert.Equal(t, uint64(1), byName["new"].Executors)
	assert.Equal(t, uint64(4), byName["new"].Slots)
	st, err = cl.Query(wctx, later.ID)
	require.NoError(t, err)
	assert.Equal(t, "pending", st.State)

	err = ex.ChangeTypes(wctx, map[string]executor.Handler{"x": echo}, "x")
	assert.True(t, errors.Is(err, executor.ErrConfig), "%v", err)
	err = ex.ChangeTypes(wctx, map[string]executor.Handler{"a,b": echo})
	assert.True(t, errors.Is(err, executor.ErrConfig), "%v", err)
	assert.Equal(t, []string{"new"}, ex.TaskTypes())
}

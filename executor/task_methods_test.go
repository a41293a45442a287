package executor_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/internal/fakemain"
	"github.com/apollo11/apollo11/wire"
)

func TestTask_Progress(t *testing.T) {
	f := mustStartFakeMain(t)
	errs := make(chan error, 3)
	mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"job": executor.HandlerFunc(
		func(_ context.Context, t *executor.Task) (executor.Result, error) {
			errs <- t.Progress(50, "half way")
			errs <- t.Progress(101, "")
			return executor.Result{}, nil
		})}})
	c := f.accept(t)
	c.registerQuiet()
	c.sendTask(8, 1, "job")
	c.expectStarted(8, 1)
	m := c.expect("progress")
	assert.Equal(t, "8", m.Value("task_id"))
	assert.Equal(t, "1", m.Value("version"))
	assert.Equal(t, "50", m.Value("percent"))
	assert.Equal(t, "half way", m.Value("note"))
	c.expectResult(8, 1)
	assert.NoError(t, <-errs)
	assert.Error(t, <-errs)

	var detached executor.Task
	assert.ErrorIs(t, detached.Progress(1, ""), executor.ErrNotConnected)
}

// Progress and State never send a frame larger than the main control's
// max_frame, which would cost the connection (spec section 1): a long note
// is cut on a rune boundary, a request for too many keys fails.
func TestTask_FramesWithinMaxFrame(t *testing.T) {
	const maxFrame = 1024
	f := mustStartFakeMain(t, fakemain.WithMaxFrame(maxFrame))
	note := strings.Repeat("é=", 2000)
	keys := make([]string, 200)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%06d", i)
	}
	errs := make(chan error, 3)
	mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"job": executor.HandlerFunc(
		func(ctx context.Context, t *executor.Task) (executor.Result, error) {
			errs <- t.Progress(10, note)
			errs <- t.Progress(20, "short")
			_, _, err := t.State(ctx, keys...)
			errs <- err
			return executor.Result{}, nil
		})}})
	c := f.accept(t)
	c.R.SetMaxFrame(maxFrame) // a larger frame fails the read
	c.registerQuiet()
	c.sendTask(8, 1, "job")
	c.expectStarted(8, 1)
	m := c.expect("progress")
	frame, err := wire.AppendFrame(nil, m)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(frame)-wire.HeaderLen, maxFrame)
	assert.Greater(t, len(frame)-wire.HeaderLen, maxFrame-8, "the note fills the room")
	got := m.Value("note")
	require.True(t, strings.HasSuffix(got, "..."), "a cut note ends in ...")
	assert.True(t, strings.HasPrefix(note, strings.TrimSuffix(got, "...")))
	assert.Equal(t, "short", c.expect("progress").Value("note"))
	c.expectResult(8, 1) // no state_get before it
	assert.NoError(t, <-errs)
	assert.NoError(t, <-errs)
	assert.ErrorIs(t, <-errs, executor.ErrRequestTooLarge)
}

func TestTask_MaxFrame(t *testing.T) {
	f := mustStartFakeMain(t, fakemain.WithMaxFrame(4096))
	got := make(chan int, 1)
	mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"job": executor.HandlerFunc(
		func(_ context.Context, t *executor.Task) (executor.Result, error) {
			got <- t.MaxFrame()
			return executor.Result{}, nil
		})}})
	c := f.accept(t)
	c.registerQuiet()
	c.sendTask(1, 1, "job")
	c.expectStarted(1, 1)
	assert.Equal(t, 4096, <-got, "the welcome's max_frame")
	c.expectResult(1, 1)

	var detached executor.Task
	assert.Equal(t, wire.DefaultMaxFrame, detached.MaxFrame())
}

func TestTask_State(t *testing.T) {
	f := mustStartFakeMain(t)
	type reply struct {
		vals    map[string]string
		version uint64
		err     error
	}
	replies := make(chan reply, 2)
	mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"job": executor.HandlerFunc(
		func(ctx context.Context, t *executor.Task) (executor.Result, error) {
			for range 2 {
				v, n, err := t.State(ctx, "a", "b")
				replies <- reply{v, n, err}
			}
			return executor.Result{}, nil
		})}})
	c := f.accept(t)
	c.registerQuiet()
	c.sendTask(8, 1, "job")
	c.expectStarted(8, 1)

	m := c.expect("state_get")
	assert.Equal(t, "a,b", m.Value("keys"))
	require.NotEmpty(t, m.Value("req"))
	c.send("state", "req", "someone-else", "state_version", "1") // not ours: dropped
	c.send("state", "req", m.Value("req"), "state_version", "7", "state.a", "1")
	r := <-replies
	require.NoError(t, r.err)
	assert.Equal(t, map[string]string{"a": "1"}, r.vals)
	assert.Equal(t, uint64(7), r.version)

	m2 := c.expect("state_get")
	assert.NotEqual(t, m.Value("req"), m2.Value("req"), "a fresh req per request")
	c.send("error", "req", m2.Value("req"), "code", "bad_request", "message", "too large")
	r = <-replies
	var se *executor.ServerError
	require.ErrorAs(t, r.err, &se)
	assert.Equal(t, wire.CodeBadRequest, se.Code)
	c.expectResult(8, 1)

	var detached executor.Task
	_, _, err := detached.State(context.Background())
	assert.ErrorIs(t, err, executor.ErrNotConnected)
	_, _, err = detached.State(context.Background(), "Bad")
	assert.Error(t, err)
}

func TestTask_StateDisconnected(t *testing.T) {
	f := mustStartFakeMain(t)
	errs := make(chan error, 1)
	mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"job": executor.HandlerFunc(
		func(ctx context.Context, t *executor.Task) (executor.Result, error) {
			_, _, err := t.State(ctx)
			errs <- err
			return executor.Result{}, nil
		})}})
	c := f.accept(t)
	c.registerQuiet()
	c.sendTask(8, 1, "job")
	c.expectStarted(8, 1)
	m := c.expect("state_get")
	assert.False(t, m.Has("keys"), "no keys: every key")
	c.Net.Close()
	select {
	case err := <-errs:
		assert.ErrorIs(t, err, executor.ErrDisconnected)
	case <-time.After(waitFor):
		t.Fatal("State did not fail on disconnect")
	}
}

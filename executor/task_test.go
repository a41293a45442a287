package executor_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/internal/fakemain"
	"github.com/apollo11/apollo11/wire"
)

func TestExecutor_Task(t *testing.T) {
	tests := []struct {
		name    string
		handler executor.HandlerFunc
		args    []string
		want    map[string]string // fields of the result (without task_id, version)
		absent  []string          // keys that must not be in the result
	}{
		{
			name: "succeeded with out and state",
			handler: func(_ context.Context, t *executor.Task) (executor.Result, error) {
				return executor.Result{
					Out: map[string]string{"b": t.Args["x"], "a": "line1\nline2=\\"},
					Set: map[string]string{"color": "blue"},
					Add: map[string]int64{"count": -3},
				}, nil
			},
			args: []string{"arg.x", "hello world"},
			want: map[string]string{"status": "succeeded", "out.a": "line1\nline2=\\", "out.b": "hello world",
				"state.set.color": "blue", "state.add.count": "-3"},
			absent: []string{"retryable", "error"},
		},
		{
			name: "retryable failure keeps out, drops state",
			handler: func(context.Context, *executor.Task) (executor.Result, error) {
				return executor.Result{Out: map[string]string{"partial": "1"}, Set: map[string]string{"k": "v"},
					Add: map[string]int64{"n": 1}}, errors.New("disk full")
			},
			want:   map[string]string{"status": "failed", "error": "disk full", "out.partial": "1"},
			absent: []string{"retryable", "state.set.k", "state.add.n"},
		},
		{
			name: "permanent failure",
			handler: func(context.Context, *executor.Task) (executor.Result, error) {
				return executor.Result{}, fmt.Errorf("bad input: %w", executor.Permanent(errors.New("no")))
			},
			want: map[string]string{"status": "failed", "retryable": "false", "error": "bad input: no"},
		},
		{
			name: "panic",
			handler: func(context.Context, *executor.Task) (executor.Result, error) {
				panic("boom")
			},
			want: map[string]string{"status": "failed", "retryable": "false", "error": "panic: boom"},
		},
		{
			name: "invalid out key",
			handler: func(context.Context, *executor.Task) (executor.Result, error) {
				return executor.Result{Out: map[string]string{"Upper": "x"}}, nil
			},
			want:   map[string]string{"status": "failed", "retryable": "false"},
			absent: []string{"out.Upper"},
		},
		{
			name: "invalid UTF-8 error text is repaired",
			handler: func(context.Context, *executor.Task) (executor.Result, error) {
				return executor.Result{}, errors.New("bad \xff byte")
			},
			want: map[string]string{"status": "failed", "error": "bad \uFFFD byte"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := mustStartFakeMain(t)
			s := mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"job": tc.handler}})
			c := f.accept(t)
			c.registerQuiet()
			c.sendTask(11, 2, "job", tc.args...)
			c.expectStarted(11, 2)
			m := c.expectResult(11, 2)
			for k, v := range tc.want {
				assert.Equal(t, v, m.Value(k), "key %s in %s", k, m)
			}
			for _, k := range tc.absent {
				assert.False(t, m.Has(k), "key %s in %s", k, m)
			}
			c.ack(11, 2)
			rec := s.logs.eventually(t, "task ended")
			for _, k := range []string{"task_id", "version", "task_type", "trace_id", "duration", "status"} {
				assert.Contains(t, rec, k)
			}
			assert.Equal(t, "tr-11", rec["trace_id"])
			assert.NotNil(t, s.logs.find("task started"))
		})
	}
}

func TestExecutor_TaskPanicLogsStack(t *testing.T) {
	f := mustStartFakeMain(t)
	s := mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"job": executor.HandlerFunc(
		func(context.Context, *executor.Task) (executor.Result, error) { panic(errors.New("kaput")) })}})
	c := f.accept(t)
	c.registerQuiet()
	c.sendTask(1, 1, "job")
	c.expectStarted(1, 1)
	assert.Equal(t, "panic: kaput", c.expectResult(1, 1).Value("error"))
	rec := s.logs.eventually(t, "handler panicked")
	assert.Equal(t, "ERROR", rec["level"])
	assert.Contains(t, rec["stack"], "task_test.go")
}

// A handler that calls runtime.Goexit (t.FailNow in a test handler) is
// reported like a panic, and its slot is free again: without that it would
// hold the slot, and be listed as running, for ever.
func TestExecutor_TaskGoexit(t *testing.T) {
	f := mustStartFakeMain(t)
	s := mustRun(t, f, executor.Config{Slots: 1, Handlers: map[string]executor.Handler{
		"quit": executor.HandlerFunc(func(context.Context, *executor.Task) (executor.Result, error) {
			runtime.Goexit()
			return executor.Result{}, nil
		}),
		"echo": echoHandler(),
	}})
	c := f.accept(t)
	c.register(20*time.Millisecond, time.Minute)
	c.sendTask(1, 1, "quit")
	c.expectStarted(1, 1)
	m := c.expectResult(1, 1)
	assert.Equal(t, "failed", m.Value("status"))
	assert.Equal(t, "false", m.Value("retryable"))
	assert.Equal(t, "handler exited without returning", m.Value("error"))
	assert.Equal(t, "ERROR", s.logs.eventually(t, "handler exited without returning")["level"])
	c.ack(1, 1)

	hb, err := c.read(true, waitFor)
	require.NoError(t, err)
	require.Equal(t, "heartbeat", hb.Type())
	assert.Equal(t, "", hb.Value("running"), "no longer listed")
	c.sendTask(2, 1, "echo") // the only slot is free
	c.expectStarted(2, 1)
	assert.Equal(t, "succeeded", c.expectResult(2, 1).Value("status"))
}

func TestExecutor_TaskFields(t *testing.T) {
	f := mustStartFakeMain(t)
	got := make(chan executor.Task, 1)
	mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"job": executor.HandlerFunc(
		func(_ context.Context, t *executor.Task) (executor.Result, error) {
			got <- *t
			return executor.Result{}, nil
		})}})
	c := f.accept(t)
	c.registerQuiet()
	c.send("task", "task_id", "5", "version", "9", "task_type", "job", "attempt", "2", "max_attempts", "4",
		"timeout_ms", "60000", "trace_id", "abc", "state_version", "17", "arg.a", "1", "arg.b.c", "x=y", "future_key", "ignored")
	c.expectStarted(5, 9)
	task := <-got
	assert.Equal(t, uint64(5), task.ID)
	assert.Equal(t, uint64(9), task.Version)
	assert.Equal(t, "job", task.Type)
	assert.Equal(t, uint64(2), task.Attempt)
	assert.Equal(t, uint64(4), task.MaxAttempts)
	assert.Equal(t, time.Minute, task.Timeout)
	assert.Equal(t, "abc", task.TraceID)
	assert.Equal(t, uint64(17), task.StateVersion)
	assert.Equal(t, map[string]string{"a": "1", "b.c": "x=y"}, task.Args)
	c.expectResult(5, 9)
}

func TestExecutor_TaskUnknownType(t *testing.T) {
	f := mustStartFakeMain(t)
	mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"echo": echoHandler()}})
	c := f.accept(t)
	c.registerQuiet()
	c.sendTask(3, 1, "nope")
	c.expectStarted(3, 1)
	m := c.expectResult(3, 1)
	assert.Equal(t, "failed", m.Value("status"))
	assert.Equal(t, "false", m.Value("retryable"))
	assert.Contains(t, m.Value("error"), "no handler")
}

func TestExecutor_IgnoresUnknownAndBadFrames(t *testing.T) {
	f := mustStartFakeMain(t)
	s := mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"echo": echoHandler()}})
	c := f.accept(t)
	c.registerQuiet()
	c.send("future_frame", "x", "1")
	c.send("task", "task_id", "oops", "version", "1", "task_type", "echo")
	c.send("cancel", "task_id", "1")
	c.send("result_ack", "task_id", "99", "version", "1", "accepted", "true")
	c.send("error", "code", "unknown_type", "message", "huh")
	c.sendTask(1, 1, "echo", "arg.k", "v")
	c.expectStarted(1, 1)
	assert.Equal(t, "v", c.expectResult(1, 1).Value("out.k"))
	assert.NotNil(t, s.logs.find("ignoring bad task frame"))
}

func TestExecutor_TaskCancel(t *testing.T) {
	f := mustStartFakeMain(t)
	release := make(chan struct{})
	causes := make(chan error, 1)
	mustRun(t, f, executor.Config{Slots: 2, Handlers: map[string]executor.Handler{
		"block": blockHandler(release, causes), "echo": echoHandler()}})
	c := f.accept(t)
	c.registerQuiet()
	c.sendTask(1, 1, "block")
	c.expectStarted(1, 1)
	c.send("cancel", "task_id", "1", "version", "1")
	select {
	case cause := <-causes:
		assert.ErrorIs(t, cause, executor.ErrCancelled)
	case <-time.After(waitFor):
		t.Fatal("handler not cancelled")
	}
	// No result for the cancelled dispatch: the next frame is task 2's.
	c.sendTask(2, 1, "echo")
	c.expectStarted(2, 1)
	c.expectResult(2, 1)
}

func TestExecutor_TaskCancelIgnoredByHandler(t *testing.T) {
	f := mustStartFakeMain(t)
	release := make(chan struct{})
	mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"stubborn": executor.HandlerFunc(
		func(context.Context, *executor.Task) (executor.Result, error) {
			<-release
			return executor.Result{}, nil
		})}})
	c := f.accept(t)
	c.registerQuiet()
	c.sendTask(1, 1, "stubborn")
	c.expectStarted(1, 1)
	c.send("cancel", "task_id", "1", "version", "1")
	c.send("cancel", "task_id", "1", "version", "1") // twice is harmless
	time.Sleep(20 * time.Millisecond)
	close(release) // succeeds anyway: still no result
	c.expectNothing(200 * time.Millisecond)
}

func TestExecutor_TaskTimeout(t *testing.T) {
	f := mustStartFakeMain(t)
	causes := make(chan error, 1)
	mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"block": blockHandler(nil, causes)}})
	c := f.accept(t)
	c.registerQuiet()
	c.send("task", "task_id", "4", "version", "1", "task_type", "block", "attempt", "1", "max_attempts", "3",
		"timeout_ms", "50", "trace_id", "t4", "state_version", "0")
	c.expectStarted(4, 1)
	m := c.expectResult(4, 1)
	assert.Equal(t, "failed", m.Value("status"))
	assert.False(t, m.Has("retryable"), "a timeout is retryable")
	assert.Equal(t, "timeout after 50ms: task timeout expired", m.Value("error"), "the result says the time ran out")
	assert.ErrorIs(t, <-causes, executor.ErrTaskTimeout)
}

func TestExecutor_TaskSlots(t *testing.T) {
	f := mustStartFakeMain(t)
	release := make(chan struct{})
	causes := make(chan error, 2)
	s := mustRun(t, f, executor.Config{Slots: 1, Handlers: map[string]executor.Handler{"block": blockHandler(release, causes)}})
	c := f.accept(t)
	c.registerQuiet()
	c.sendTask(1, 1, "block")
	c.expectStarted(1, 1)
	c.sendTask(2, 1, "block") // no free slot: not started
	rec := s.logs.eventually(t, "task not started")
	assert.Equal(t, "no free slot", rec["reason"])
	assert.EqualValues(t, 2, rec["task_id"])
	close(release)
	c.expectResult(1, 1)
	c.ack(1, 1)
	c.expectNothing(100 * time.Millisecond)
	// The slot is free again.
	c.sendTask(2, 2, "block")
	c.expectStarted(2, 2)
	c.expectResult(2, 2)
}

func TestExecutor_ResultTooLarge(t *testing.T) {
	f := mustStartFakeMain(t, fakemain.WithMaxFrame(512))
	mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"big": executor.HandlerFunc(
		func(context.Context, *executor.Task) (executor.Result, error) {
			return executor.Result{Out: map[string]string{"big": strings.Repeat("x", 600)}, Set: map[string]string{"k": "v"}}, nil
		})}})
	c := f.accept(t)
	c.registerQuiet()
	c.sendTask(1, 1, "big")
	c.expectStarted(1, 1)
	m := c.expectResult(1, 1)
	assert.Equal(t, "failed", m.Value("status"))
	assert.Equal(t, "false", m.Value("retryable"))
	assert.Equal(t, "result too large", m.Value("error"))
	assert.Empty(t, prefixed(m, wire.PrefixOut))
	assert.Empty(t, prefixed(m, wire.PrefixState))
}

// A task frame with a readable dispatch token but a missing key or a bad
// value (spec section 4 lists every key) is started and failed for good:
// ignored, it would come back after every start timeout. A timeout_ms
// beyond what a time.Duration holds (~292 years) means no timeout.
func TestExecutor_BadTaskFramesFail(t *testing.T) {
	f := mustStartFakeMain(t)
	got := make(chan executor.Task, 1)
	mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{
		"echo": echoHandler(),
		"peek": executor.HandlerFunc(func(_ context.Context, t *executor.Task) (executor.Result, error) {
			got <- *t
			return executor.Result{}, nil
		})}})
	c := f.accept(t)
	c.registerQuiet()
	full := func(id string, drop string, set ...string) []string {
		kv := map[string]string{"task_id": id, "version": "1", "task_type": "echo", "attempt": "1",
			"max_attempts": "3", "timeout_ms": "0", "trace_id": "t", "state_version": "0"}
		delete(kv, drop)
		for i := 0; i+1 < len(set); i += 2 {
			kv[set[i]] = set[i+1]
		}
		var out []string
		for _, k := range []string{"task_id", "version", "task_type", "attempt", "max_attempts", "timeout_ms", "trace_id", "state_version"} {
			if v, ok := kv[k]; ok {
				out = append(out, k, v)
			}
		}
		return out
	}
	tests := []struct {
		kv   []string
		want string
	}{
		{full("1", "attempt"), "bad task frame: attempt: required key missing"},
		{full("2", "trace_id"), "bad task frame: trace_id: required key missing"},
		{full("3", "task_type"), "bad task frame: task_type: required key missing"},
		{full("4", "", "max_attempts", "x"), "bad task frame"},
		{full("5", "", "timeout_ms", "-1"), "bad task frame"},
	}
	for i, tc := range tests {
		id := uint64(i + 1)
		c.send("task", tc.kv...)
		c.expectStarted(id, 1)
		m := c.expectResult(id, 1)
		assert.Equal(t, "failed", m.Value("status"), "%v", tc.kv)
		assert.Equal(t, "false", m.Value("retryable"), "%v", tc.kv)
		assert.Contains(t, m.Value("error"), tc.want, "%v", tc.kv)
		c.ack(id, 1)
	}

	c.send("task", full("9", "", "task_type", "peek", "timeout_ms", "18446744073709551615")...)
	c.expectStarted(9, 1)
	assert.Equal(t, "succeeded", c.expectResult(9, 1).Value("status"))
	assert.Zero(t, (<-got).Timeout, "beyond a Duration: no timeout")
}

// A dispatch sent again after it ran, while its result awaits result_ack,
// is not run a second time: one dispatch, one result.
func TestExecutor_DispatchResentBeforeAck(t *testing.T) {
	f := mustStartFakeMain(t)
	runs := make(chan struct{}, 4)
	s := mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"job": executor.HandlerFunc(
		func(context.Context, *executor.Task) (executor.Result, error) {
			runs <- struct{}{}
			return executor.Result{}, nil
		})}})
	c := f.accept(t)
	c.registerQuiet()
	c.sendTask(10, 1, "job")
	c.expectStarted(10, 1)
	c.expectResult(10, 1)
	c.sendTask(10, 1, "job") // no result_ack yet
	rec := s.logs.eventually(t, "task not started")
	assert.Contains(t, rec["reason"], "awaits result_ack")
	c.expectNothing(200 * time.Millisecond)
	assert.Len(t, runs, 1, "ran once")
}

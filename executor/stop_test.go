package executor_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/executor"
)

func TestExecutor_GracefulStop(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		f := mustStartFakeMain(t)
		s := mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"echo": echoHandler()}})
		c := f.accept(t)
		c.registerQuiet()
		s.logs.eventually(t, "registered")
		s.cancel()
		assert.Equal(t, "shutdown", c.expect("bye").Value("reason"))
		c.send("bye_ack")
		assert.NoError(t, s.wait(t, waitFor))
		f.noConn(t, 50*time.Millisecond)
	})
	t.Run("running handler finishes and is acked before bye", func(t *testing.T) {
		f := mustStartFakeMain(t)
		release := make(chan struct{})
		causes := make(chan error, 1)
		s := mustRun(t, f, executor.Config{Slots: 2, Handlers: map[string]executor.Handler{
			"block": blockHandler(release, causes), "echo": echoHandler()}})
		c := f.accept(t)
		c.registerQuiet()
		c.sendTask(1, 1, "block")
		c.expectStarted(1, 1)
		s.cancel()
		s.logs.eventually(t, "draining")

		c.sendTask(2, 1, "echo") // draining: not started
		rec := s.logs.eventually(t, "task not started")
		assert.Equal(t, "draining", rec["reason"])
		c.expectNothing(50 * time.Millisecond)

		close(release)
		require.NoError(t, <-causes, "the handler was not cancelled")
		assert.Equal(t, "yes", c.expectResult(1, 1).Value("out.done"))
		c.expectNothing(50 * time.Millisecond) // no bye before the ack
		c.ack(1, 1)
		assert.Equal(t, "shutdown", c.expect("bye").Value("reason"))
		c.send("bye_ack")
		c.Net.Close()
		assert.NoError(t, s.wait(t, waitFor))
	})
	t.Run("drain timeout cancels the rest", func(t *testing.T) {
		f := mustStartFakeMain(t)
		causes := make(chan error, 1)
		s := mustRun(t, f, executor.Config{DrainTimeout: 100 * time.Millisecond,
			Handlers: map[string]executor.Handler{"block": blockHandler(nil, causes)}})
		c := f.accept(t)
		c.registerQuiet()
		c.sendTask(1, 1, "block")
		c.expectStarted(1, 1)
		start := time.Now()
		s.cancel()
		assert.ErrorIs(t, <-causes, executor.ErrShutdown)
		assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
		// No result for the cancelled handler: bye comes next.
		assert.Equal(t, "shutdown", c.expect("bye").Value("reason"))
		c.send("bye_ack")
		assert.NoError(t, s.wait(t, waitFor))
	})
	t.Run("no bye_ack", func(t *testing.T) {
		f := mustStartFakeMain(t)
		s := mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"echo": echoHandler()}})
		c := f.accept(t)
		c.registerQuiet()
		s.logs.eventually(t, "registered")
		start := time.Now()
		s.cancel()
		c.expect("bye")
		assert.NoError(t, s.wait(t, waitFor))
		assert.GreaterOrEqual(t, time.Since(start), 2*time.Second, "bounded wait for bye_ack")
		c.expectClosed(waitFor)
	})
	t.Run("while disconnected", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		ln.Close() // nothing listens: the executor keeps retrying
		e, err := executor.New(executor.Config{ID: "x", Addr: addr, Logger: newLogger(io.Discard),
			Handlers: map[string]executor.Handler{"echo": echoHandler()}})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		time.Sleep(50 * time.Millisecond)
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(waitFor):
			t.Fatal("Run did not return")
		}
	})
}

func TestExecutor_Stop(t *testing.T) {
	t.Run("during a drain", func(t *testing.T) {
		f := mustStartFakeMain(t)
		causes := make(chan error, 1)
		s := mustRun(t, f, executor.Config{DrainTimeout: time.Minute,
			Handlers: map[string]executor.Handler{"block": blockHandler(nil, causes)}})
		c := f.accept(t)
		c.registerQuiet()
		c.sendTask(1, 1, "block")
		c.expectStarted(1, 1)
		s.cancel()
		s.logs.eventually(t, "draining")
		start := time.Now()
		s.e.Stop()
		assert.ErrorIs(t, <-causes, executor.ErrStopped)
		assert.NoError(t, s.wait(t, waitFor))
		assert.Less(t, time.Since(start), time.Second)
		assert.Equal(t, "stop", c.expect("bye").Value("reason"), "best-effort bye")
		c.expectClosed(waitFor)
	})
	t.Run("without a drain", func(t *testing.T) {
		f := mustStartFakeMain(t)
		causes := make(chan error, 1)
		s := mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"block": blockHandler(nil, causes)}})
		c := f.accept(t)
		c.registerQuiet()
		c.sendTask(1, 1, "block")
		c.expectStarted(1, 1)
		s.e.Stop()
		s.e.Stop() // idempotent
		assert.ErrorIs(t, <-causes, executor.ErrStopped)
		assert.NoError(t, s.wait(t, time.Second))
		assert.Equal(t, "stop", c.expect("bye").Value("reason"))
		c.expectClosed(waitFor) // no result for the stopped handler
		f.noConn(t, 50*time.Millisecond)
	})
}

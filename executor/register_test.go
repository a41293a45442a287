package executor_test

import (
	"context"
	"errors"
	"io"
	"math"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/internal/fakemain"
	"github.com/apollo11/apollo11/wire"
)

func TestExecutor_Register(t *testing.T) {
	handlers := map[string]executor.Handler{"zeta": echoHandler(), "alpha": echoHandler(), "mid": echoHandler()}
	t.Run("auth none", func(t *testing.T) {
		f := mustStartFakeMain(t)
		mustRun(t, f, executor.Config{ID: "w:1", Handlers: handlers, Slots: 4, Token: []byte("secret")})
		c := f.accept(t)
		m := c.registerQuiet()
		assert.Equal(t, "1", m.Value("proto"))
		assert.Equal(t, "w:1", m.Value("executor_id"))
		assert.Equal(t, "alpha,mid,zeta", m.Value("task_types"), "task types sorted")
		assert.Equal(t, "4", m.Value("slots"))
		assert.False(t, m.Has("auth"), "no auth sent when the main control says auth=none")
	})
	// v1 auth is one-way: a main control that does not ask for the token
	// the executor holds may be another program at the address.
	t.Run("auth none with a token warns at every registration", func(t *testing.T) {
		f := mustStartFakeMain(t)
		s := mustRun(t, f, executor.Config{Handlers: handlers, Token: []byte("secret")})
		const warning = "the main control does not ask for the token: it may not be the one configured"
		for i := range 2 {
			c := f.accept(t)
			c.registerQuiet()
			require.Eventually(t, func() bool {
				n := 0
				for _, r := range s.logs.records() {
					if r["msg"] == warning && r["level"] == "WARN" {
						n++
					}
				}
				return n == i+1
			}, waitFor, 5*time.Millisecond, "registration %d", i+1)
			c.Net.Close()
		}
	})
	t.Run("auth none without a token", func(t *testing.T) {
		f := mustStartFakeMain(t)
		s := mustRun(t, f, executor.Config{Handlers: handlers})
		f.accept(t).registerQuiet()
		s.logs.eventually(t, "registered")
		assert.Nil(t, s.logs.find("the main control does not ask for the token: it may not be the one configured"))
	})
	t.Run("hmac", func(t *testing.T) {
		f := mustStartFakeMain(t, fakemain.WithAuth())
		mustRun(t, f, executor.Config{ID: "w1", Handlers: handlers, Token: []byte("secret")})
		c := f.accept(t)
		m := c.registerQuiet()
		assert.Equal(t, auth.Sign([]byte("secret"), c.Nonce), m.Value("auth"))
		assert.True(t, auth.Verify([]byte("secret"), c.Nonce, m.Value("auth")))
		assert.Equal(t, "1", m.Value("slots"), "default slots")
	})
	t.Run("hmac without token", func(t *testing.T) {
		f := mustStartFakeMain(t, fakemain.WithAuth())
		s := mustRun(t, f, executor.Config{Handlers: handlers})
		m := f.accept(t).expect("register")
		assert.False(t, m.Has("auth"))
		rec := s.logs.eventually(t, "the main control requires auth but no token is configured")
		assert.Equal(t, "ERROR", rec["level"])
	})
}

// A heartbeat lists every running dispatch and may not exceed the main
// control's max_frame (spec section 1), so a connection registers at most
// as many slots as a heartbeat of the longest tokens can list, runs no
// more, and says so; the next connection, with another max_frame, may
// register more.
func TestExecutor_SlotsWithinMaxFrame(t *testing.T) {
	const maxFrame, fit = 1024, 23 // (1024 - 47) / 42
	f := mustStartFakeMain(t, fakemain.WithMaxFrame(maxFrame))
	release := make(chan struct{})
	defer close(release)
	s := mustRun(t, f, executor.Config{Slots: 300, Handlers: map[string]executor.Handler{
		"block": blockHandler(release, make(chan error, 300))}})
	c := f.accept(t)
	c.R.SetMaxFrame(maxFrame) // a larger frame fails the read
	assert.Equal(t, "23", c.register(20*time.Millisecond, time.Minute).Value("slots"))
	rec := s.logs.eventually(t, "registering fewer slots than configured: a heartbeat listing more running tasks could exceed the main control's max_frame")
	assert.Equal(t, "WARN", rec["level"])
	assert.EqualValues(t, 300, rec["slots"])
	assert.EqualValues(t, fit, rec["registered_slots"])

	const top = math.MaxUint64 // the longest tokens
	for i := range uint64(fit + 1) {
		c.sendTask(top-i, top, "block")
	}
	for range fit {
		c.expect("started")
	}
	assert.Equal(t, "no free slot", s.logs.eventually(t, "task not started")["reason"], "never more handlers than slots")
	var hb *wire.Message
	for hb == nil || strings.Count(hb.Value("running"), ",") < fit-1 {
		m, err := c.read(true, waitFor)
		require.NoError(t, err, "every heartbeat within max_frame")
		if m.Type() == "heartbeat" {
			hb = m
		}
	}
	assert.Len(t, strings.Split(hb.Value("running"), ","), fit)
	frame, err := wire.AppendFrame(nil, hb)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(frame)-wire.HeaderLen, maxFrame)

	f.SetMaxFrame(1 << 20)
	c.Net.Close()
	assert.Equal(t, "300", f.accept(t).registerQuiet().Value("slots"), "max_frame comes with each welcome")
}

// Dispatches still running from a connection with a larger max_frame may
// not fit the heartbeat of the next: those that do not are left out, and
// logged, rather than every heartbeat costing the connection.
func TestExecutor_HeartbeatLeavesOutWhatDoesNotFit(t *testing.T) {
	const maxFrame, fit, running = 1024, 23, 30
	f := mustStartFakeMain(t)
	release := make(chan struct{})
	defer close(release)
	s := mustRun(t, f, executor.Config{Slots: running, Handlers: map[string]executor.Handler{
		"block": blockHandler(release, make(chan error, running))}})
	c := f.accept(t)
	c.registerQuiet()
	const top = math.MaxUint64
	for i := range uint64(running) {
		c.sendTask(top-i, top, "block")
		c.expect("started")
	}

	f.SetMaxFrame(maxFrame)
	c.Net.Close()
	c = f.accept(t)
	c.R.SetMaxFrame(maxFrame)
	assert.Equal(t, "23", c.register(20*time.Millisecond, time.Minute).Value("slots"))
	for {
		m, err := c.read(true, waitFor)
		require.NoError(t, err, "every heartbeat within max_frame")
		if m.Type() == "heartbeat" {
			assert.Len(t, strings.Split(m.Value("running"), ","), fit)
			break
		}
	}
	rec := s.logs.eventually(t, "heartbeat leaves out running dispatches that do not fit max_frame; the main control will cancel them")
	assert.EqualValues(t, running-fit, rec["left_out"])
}

// A frame the executor cannot decode is answered with an error frame, as
// every peer answers one (spec sections 1 and 2), before the executor
// closes and connects again.
func TestExecutor_RefusesUndecodableFrame(t *testing.T) {
	for _, tc := range fakemain.BrokenFrames {
		t.Run(tc.Name, func(t *testing.T) {
			f := mustStartFakeMain(t)
			mustRun(t, f, executor.Config{ID: "w1", Handlers: map[string]executor.Handler{"echo": echoHandler()}})
			c := f.accept(t)
			c.register(time.Hour, 3*time.Hour)
			c.SendRaw(tc.Raw)
			m := c.expect("error")
			assert.Equal(t, string(tc.Code), m.Value("code"))
			assert.NotEmpty(t, m.Value("message"))
			c.expectClosed(waitFor)
			f.accept(t).expect("register")
		})
	}
}

// During the handshake too: a welcome or a registered the executor cannot
// decode gets the same answer. Only another service's text banner (an SSH
// server at the address) gets none: it would not understand one.
func TestExecutor_RefusesUndecodableHandshakeFrame(t *testing.T) {
	handlers := map[string]executor.Handler{"echo": echoHandler()}
	for _, tc := range fakemain.BrokenFrames {
		t.Run("welcome "+tc.Name, func(t *testing.T) {
			f := mustStartFakeMain(t, fakemain.WithGreeting(tc.Raw))
			s := mustRun(t, f, executor.Config{Handlers: handlers})
			c := f.accept(t)
			m := c.expect("error")
			assert.Equal(t, string(tc.Code), m.Value("code"))
			c.expectClosed(waitFor)
			assert.Contains(t, s.logs.eventually(t, "cannot register with the main control")["err"], "cannot read welcome")
		})
		t.Run("registered "+tc.Name, func(t *testing.T) {
			f := mustStartFakeMain(t)
			mustRun(t, f, executor.Config{Handlers: handlers})
			c := f.accept(t)
			c.expect("register")
			c.SendRaw(tc.Raw)
			m := c.expect("error")
			assert.Equal(t, string(tc.Code), m.Value("code"))
			c.expectClosed(waitFor)
		})
	}
	t.Run("another service", func(t *testing.T) {
		f := mustStartFakeMain(t, fakemain.WithGreeting([]byte("SSH-2.0-OpenSSH_9.6\r\n")))
		mustRun(t, f, executor.Config{Handlers: handlers})
		c := f.accept(t)
		require.NoError(t, c.Net.SetReadDeadline(time.Now().Add(waitFor)))
		n, err := c.Net.Read(make([]byte, 64))
		assert.Zero(t, n, "nothing sent to a service that is not apollo11")
		if !errors.Is(err, syscall.ECONNRESET) { // a close with our bytes unread
			assert.ErrorIs(t, err, io.EOF)
		}
	})
}

func TestExecutor_RegisterRefused(t *testing.T) {
	tests := []struct {
		code  string
		level string
	}{
		{"auth_failed", "ERROR"},
		{"duplicate_executor", "WARN"},
		{"unsupported_proto", "WARN"},
		{"bad_request", "WARN"},
	}
	for _, tc := range tests {
		t.Run(tc.code, func(t *testing.T) {
			f := mustStartFakeMain(t)
			s := mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"echo": echoHandler()}})
			c := f.accept(t)
			c.expect("register")
			c.send("error", "code", tc.code, "message", "no")
			c.Net.Close()

			// It keeps retrying, with backoff, and logs the refusal.
			c2 := f.accept(t)
			c2.registerQuiet()
			rec := s.logs.eventually(t, "cannot register with the main control")
			assert.Equal(t, tc.level, rec["level"])
			assert.Contains(t, rec["err"], tc.code)
		})
	}
}

func TestExecutor_Reconnect(t *testing.T) {
	t.Run("after the connection drops", func(t *testing.T) {
		f := mustStartFakeMain(t)
		mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"echo": echoHandler()}})
		for range 3 {
			c := f.accept(t)
			c.registerQuiet()
			c.Net.Close()
		}
	})
	t.Run("when no frame arrives for timeout_ms", func(t *testing.T) {
		f := mustStartFakeMain(t)
		s := mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"echo": echoHandler()}})
		c := f.accept(t)
		start := time.Now()
		c.register(20*time.Millisecond, 150*time.Millisecond)
		// Never answer: no pong, nothing. The executor gives up on us.
		c.expectClosed(waitFor)
		assert.GreaterOrEqual(t, time.Since(start), 140*time.Millisecond)
		f.accept(t).registerQuiet()
		rec := s.logs.eventually(t, "connection to the main control lost")
		assert.Contains(t, rec["err"], "no frame from the main control")
	})
	t.Run("bytes that never make a frame are no frame", func(t *testing.T) {
		f := mustStartFakeMain(t)
		mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"echo": echoHandler()}})
		c := f.accept(t)
		start := time.Now()
		c.register(20*time.Millisecond, 300*time.Millisecond)
		// A frame announcing 100 bytes, trickled a byte at a time, far
		// slower than it would take to finish within timeout_ms.
		c.SendRaw([]byte{0, 0, 0, 100})
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			c.expectClosed(waitFor)
		}()
		tick := time.NewTicker(40 * time.Millisecond) // 4 s for the whole frame
		defer tick.Stop()
		for sent := 0; sent < 100; sent++ {
			select {
			case <-closed:
				assert.Less(t, time.Since(start), 2*time.Second, "closed about timeout_ms after the last whole frame")
				f.accept(t).registerQuiet()
				return
			case <-tick.C:
				_, _ = c.Net.Write([]byte{'x'}) // fails once the executor has closed
			}
		}
		t.Fatal("the executor waited for the whole trickled frame")
	})
	t.Run("pongs keep the connection", func(t *testing.T) {
		f := mustStartFakeMain(t)
		mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"echo": echoHandler()}})
		c := f.accept(t)
		c.register(20*time.Millisecond, 300*time.Millisecond)
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			m, err := c.read(true, waitFor)
			require.NoError(t, err)
			require.Equal(t, "heartbeat", m.Type())
			c.send("pong", "seq", m.Value("seq"))
		}
		f.noConn(t, 10*time.Millisecond)
	})
	t.Run("closed before registered", func(t *testing.T) {
		ln := mustStartFakeMain(t)
		mustRun(t, ln, executor.Config{Handlers: map[string]executor.Handler{"echo": echoHandler()}, DialTimeout: 100 * time.Millisecond})
		c := ln.accept(t)
		c.expect("register")
		c.send("registered_not", "x", "1")
		c.Net.Close()
		ln.accept(t).registerQuiet()
	})
}

func TestExecutor_Heartbeat(t *testing.T) {
	f := mustStartFakeMain(t)
	release := make(chan struct{})
	causes := make(chan error, 1)
	mustRun(t, f, executor.Config{Slots: 2, Handlers: map[string]executor.Handler{
		"block": blockHandler(release, causes), "echo": echoHandler()}})
	c := f.accept(t)
	c.register(20*time.Millisecond, time.Minute)

	hb := func() (seq, running string) {
		t.Helper()
		m, err := c.read(true, waitFor)
		require.NoError(t, err)
		require.Equal(t, "heartbeat", m.Type(), "frame %s", m)
		require.True(t, m.Has("running"), "running= always sent")
		return m.Value("seq"), m.Value("running")
	}
	seq, running := hb()
	assert.Equal(t, "1", seq, "seq starts at 1")
	assert.Equal(t, "", running)
	seq, _ = hb()
	assert.Equal(t, "2", seq)

	c.sendTask(7, 3, "block")
	for {
		m, err := c.read(true, waitFor)
		require.NoError(t, err)
		if m.Type() == "started" {
			break
		}
	}
	_, running = hb()
	assert.Equal(t, "7.3", running)
	close(release)
	m := c.expectResult(7, 3)
	assert.Equal(t, "succeeded", m.Value("status"))
	_, running = hb()
	assert.Equal(t, "", running)

	// seq restarts at 1 on a new connection.
	c.Net.Close()
	c2 := f.accept(t)
	c2.register(20*time.Millisecond, time.Minute)
	// The unacked result comes first, then heartbeats.
	c2.expectStarted(7, 3)
	c2.expectResult(7, 3)
	c2.ack(7, 3)
	m, err := c2.read(true, waitFor)
	require.NoError(t, err)
	assert.Equal(t, "heartbeat", m.Type())
	assert.Equal(t, "1", m.Value("seq"))
}

func TestExecutor_Run(t *testing.T) {
	t.Run("twice", func(t *testing.T) {
		f := mustStartFakeMain(t)
		s := mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"echo": echoHandler()}})
		f.accept(t).registerQuiet()
		assert.ErrorIs(t, s.e.Run(context.Background()), executor.ErrAlreadyRunning)
	})
	t.Run("stop before run", func(t *testing.T) {
		e, err := executor.New(executor.Config{ID: "x", Addr: "127.0.0.1:1", Logger: newLogger(io.Discard), Handlers: map[string]executor.Handler{"echo": echoHandler()}})
		require.NoError(t, err)
		e.Stop()
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(waitFor):
			t.Fatal("Run did not return")
		}
	})
}

// Once registered, the reconnect delay stays under half the main
// control's timeout_ms: a restarted main control waits one timeout_ms for
// its executors to list their tasks, and a longer backoff would come back
// after it moved them on.
func TestExecutor_BackoffUnderHalfTheTimeout(t *testing.T) {
	f := mustStartFakeMain(t)
	mustRun(t, f, executor.Config{BackoffMin: 20 * time.Millisecond, BackoffMax: time.Minute,
		Handlers: map[string]executor.Handler{"echo": echoHandler()}})
	c := f.accept(t)
	c.register(time.Minute, 400*time.Millisecond)
	c.Net.Close()
	last := time.Now()
	for i := range 10 { // uncapped, the tenth delay would be 5 s or more
		c := f.accept(t)
		gap := time.Since(last)
		last = time.Now()
		c.Net.Close() // the handshake fails: the delay doubles, up to its cap
		assert.Less(t, gap, 800*time.Millisecond, "attempt %d came %v after the one before", i, gap)
	}
}

// A main control that drops each connection soon after registering it
// (flapping) is retried ever more slowly, as one that cannot be reached;
// a connection that held for the delay's cap starts the doubling again.
func TestExecutor_BackoffGrowsWhileFlapping(t *testing.T) {
	f := mustStartFakeMain(t)
	mustRun(t, f, executor.Config{BackoffMin: 20 * time.Millisecond, BackoffMax: 400 * time.Millisecond,
		Handlers: map[string]executor.Handler{"echo": echoHandler()}})
	var dropped time.Time
	flap := func() time.Duration { // the way back, then register and drop at once
		c := f.accept(t)
		back := time.Since(dropped)
		c.register(time.Minute, time.Minute)
		dropped = time.Now()
		c.Net.Close()
		return back
	}
	flap()
	var total time.Duration
	for range 5 {
		total += flap()
	}
	// Upper ends 20, 40, 80, 160, 320 ms, each delay drawn from [d/2, d]:
	// at least 310 ms in all. Reset at each registration, each would be
	// at most 20 ms: 100 ms in all.
	assert.Greater(t, total, 280*time.Millisecond)

	c := f.accept(t)
	c.register(time.Minute, time.Minute)
	time.Sleep(500 * time.Millisecond) // longer than the cap: it held
	start := time.Now()
	c.Net.Close()
	f.accept(t).registerQuiet()
	assert.Less(t, time.Since(start), 200*time.Millisecond, "after a connection that held, the delay starts at BackoffMin again")
}

// Versions are uint64 (a restart epoch fills the high 32 bits): a task
// whose version is past 2^32, up to 2^64-1, runs, is listed in running=
// and answered under that version, and a cancel names it.
func TestExecutor_VersionsUpToMaxUint64(t *testing.T) {
	f := mustStartFakeMain(t)
	release := make(chan struct{})
	causes := make(chan error, 2)
	mustRun(t, f, executor.Config{Slots: 2, Handlers: map[string]executor.Handler{
		"block": blockHandler(release, causes)}})
	c := f.accept(t)
	c.register(20*time.Millisecond, time.Minute)
	const epoch1, top = uint64(1)<<32 | 1, uint64(1<<64 - 1)
	c.sendTask(7, epoch1, "block")
	c.sendTask(8, top, "block")
	started := map[string]string{}
	for len(started) < 2 {
		m, err := c.read(false, waitFor)
		require.NoError(t, err)
		require.Equal(t, "started", m.Type(), "frame %s", m)
		started[m.Value("task_id")] = m.Value("version")
	}
	assert.Equal(t, map[string]string{"7": "4294967297", "8": "18446744073709551615"}, started)
	for {
		m, err := c.read(true, waitFor)
		require.NoError(t, err)
		if m.Type() == "heartbeat" && m.Value("running") != "" {
			assert.ElementsMatch(t, []string{"7.4294967297", "8.18446744073709551615"}, strings.Split(m.Value("running"), ","))
			break
		}
	}
	c.send("cancel", "task_id", "8", "version", u(top))
	select {
	case cause := <-causes:
		assert.ErrorIs(t, cause, executor.ErrCancelled, "the cancel named its dispatch")
	case <-time.After(waitFor):
		t.Fatal("handler not cancelled")
	}
	close(release)
	assert.Equal(t, "succeeded", c.expectResult(7, epoch1).Value("status"))
}

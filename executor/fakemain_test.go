package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/internal/fakemain"
	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/wire"
)

// waitFor bounds every wait in these tests.
var waitFor = fakemain.WaitFor

// fakeMain is a scripted main control (see internal/fakemain); the tests
// drive each connection by hand.
type fakeMain struct{ *fakemain.Server }

// fakeConn is one accepted connection, with the executor side of the
// protocol's helpers.
type fakeConn struct{ *fakemain.Conn }

// mustStartFakeMain listens on 127.0.0.1:0 and stops at the end of the test.
func mustStartFakeMain(tb testing.TB, opts ...fakemain.Option) *fakeMain {
	tb.Helper()
	return &fakeMain{fakemain.Start(tb, opts...)}
}

func (f *fakeMain) addr() string { return f.Addr() }

// pipeDial is an executor.Config.Dial through net.Pipe, with no sockets.
func (f *fakeMain) pipeDial(ctx context.Context, addr string) (net.Conn, error) {
	return f.PipeDial(ctx, addr)
}

// accept returns the next connection; the test owns it (closed at cleanup).
func (f *fakeMain) accept(tb testing.TB) *fakeConn {
	tb.Helper()
	return &fakeConn{f.Accept(tb)}
}

func (f *fakeMain) noConn(tb testing.TB, d time.Duration) {
	tb.Helper()
	f.NoConn(tb, d)
}

func (c *fakeConn) send(typ string, kv ...string) { c.Send(typ, kv...) }

// read reads the next frame, skipping heartbeats unless keepHB.
func (c *fakeConn) read(keepHB bool, d time.Duration) (*wire.Message, error) {
	for {
		// An error, not a failed assertion: a reader goroutine may find
		// the connection closed by the test's cleanup between two reads.
		if err := c.Net.SetReadDeadline(time.Now().Add(d)); err != nil {
			return nil, err
		}
		m, err := c.R.ReadMessage()
		if err != nil {
			return nil, err
		}
		if keepHB || m.Type() != "heartbeat" {
			return m, nil
		}
	}
}

// expect reads the next frame other than a heartbeat and checks its type.
func (c *fakeConn) expect(typ string) *wire.Message {
	c.T.Helper()
	m, err := c.read(false, waitFor)
	require.NoError(c.T, err, "waiting for %s", typ)
	require.Equal(c.T, typ, m.Type(), "frame: %s", m)
	return m
}

// expectNothing checks that no frame other than heartbeats arrives within d.
func (c *fakeConn) expectNothing(d time.Duration) {
	c.T.Helper()
	m, err := c.read(false, d)
	if err == nil {
		c.T.Fatalf("unexpected frame: %s", m)
	}
	require.ErrorIs(c.T, err, os.ErrDeadlineExceeded)
	c.R = wire.NewReader(c.Net, 0) // a timed-out Reader keeps its error
}

// expectClosed checks that the executor closes the connection within d,
// ignoring whatever it sends first.
func (c *fakeConn) expectClosed(d time.Duration) {
	c.T.Helper()
	deadline := time.Now().Add(d)
	for {
		require.NoError(c.T, c.Net.SetReadDeadline(deadline))
		_, err := c.R.ReadMessage()
		if err != nil {
			// A close with bytes we sent still unread reaches us as a reset.
			if !errors.Is(err, syscall.ECONNRESET) {
				require.ErrorIs(c.T, err, io.EOF, "want the executor to close the connection")
			}
			return
		}
	}
}

// register reads `register` and answers `registered` with the given timings.
func (c *fakeConn) register(heartbeat, timeout time.Duration) *wire.Message {
	c.T.Helper()
	m := c.expect("register")
	c.send("registered", "executor_id", m.Value("executor_id"),
		"heartbeat_ms", strconv.FormatInt(heartbeat.Milliseconds(), 10),
		"timeout_ms", strconv.FormatInt(timeout.Milliseconds(), 10), "state_version", "0")
	return m
}

// registerQuiet registers with timings long enough that no heartbeat
// interferes with the test.
func (c *fakeConn) registerQuiet() *wire.Message {
	c.T.Helper()
	return c.register(time.Minute, 3*time.Minute)
}

// sendTask sends a `task` frame with the given args (arg.* keys).
func (c *fakeConn) sendTask(id, version uint64, typ string, extra ...string) {
	c.T.Helper()
	kv := []string{"task_id", u(id), "version", u(version), "task_type", typ, "attempt", "1",
		"max_attempts", "3", "timeout_ms", "0", "trace_id", "tr-" + u(id), "state_version", "0"}
	c.send("task", append(kv, extra...)...)
}

// expectStarted reads `started` and checks its token.
func (c *fakeConn) expectStarted(id, version uint64) {
	c.T.Helper()
	m := c.expect("started")
	require.Equal(c.T, u(id), m.Value("task_id"))
	require.Equal(c.T, u(version), m.Value("version"))
}

// expectResult reads `result`, checks its token and returns it.
func (c *fakeConn) expectResult(id, version uint64) *wire.Message {
	c.T.Helper()
	m := c.expect("result")
	require.Equal(c.T, u(id), m.Value("task_id"), "frame: %s", m)
	require.Equal(c.T, u(version), m.Value("version"))
	return m
}

func (c *fakeConn) ack(id, version uint64) {
	c.T.Helper()
	c.send("result_ack", "task_id", u(id), "version", u(version), "accepted", "true")
}

func u(n uint64) string { return strconv.FormatUint(n, 10) }

// prefixed returns the fields of m under prefix, without it.
func prefixed(m *wire.Message, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range m.WithPrefix(prefix) {
		out[k] = v
	}
	return out
}

// logBuffer collects JSON log records, safe for concurrent use.
type logBuffer struct{ syncbuf.Buffer }

// records returns the records so far, decoded.
func (l *logBuffer) records() []map[string]any {
	var recs []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(l.String()), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if json.Unmarshal([]byte(line), &r) == nil {
			recs = append(recs, r)
		}
	}
	return recs
}

// find returns the first record with the given message, or nil.
func (l *logBuffer) find(msg string) map[string]any {
	for _, r := range l.records() {
		if r["msg"] == msg {
			return r
		}
	}
	return nil
}

// eventually waits for a record with the given message.
func (l *logBuffer) eventually(tb testing.TB, msg string) map[string]any {
	tb.Helper()
	deadline := time.Now().Add(waitFor)
	for time.Now().Before(deadline) {
		if r := l.find(msg); r != nil {
			return r
		}
		time.Sleep(5 * time.Millisecond)
	}
	tb.Fatalf("no log record %q", msg)
	return nil
}

func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// started is a running executor under test.
type started struct {
	e      *executor.Executor
	cancel context.CancelFunc
	done   chan error
	logs   *logBuffer
}

// mustRun creates and runs an executor against f (or cfg.Addr and
// cfg.Addrs when f is nil); cleanup hard-stops it and
// waits for Run to return.
func mustRun(tb testing.TB, f *fakeMain, cfg executor.Config) *started {
	tb.Helper()
	logs := &logBuffer{}
	if f != nil { // nil: cfg names its addresses
		cfg.Addr = f.addr()
	}
	if cfg.ID == "" {
		cfg.ID = "exec-1"
	}
	if cfg.Logger == nil {
		cfg.Logger = newLogger(logs)
	}
	if cfg.BackoffMin == 0 {
		cfg.BackoffMin, cfg.BackoffMax = 10*time.Millisecond, 50*time.Millisecond
	}
	e, err := executor.New(cfg)
	require.NoError(tb, err)
	ctx, cancel := context.WithCancel(context.Background())
	s := &started{e: e, cancel: cancel, done: make(chan error, 1), logs: logs}
	go func() { s.done <- e.Run(ctx) }()
	tb.Cleanup(func() {
		e.Stop()
		cancel()
		select {
		case <-s.done:
		case <-time.After(waitFor):
			tb.Error("Run did not return after Stop")
		}
	})
	return s
}

// wait waits for Run to return and returns its error.
func (s *started) wait(tb testing.TB, d time.Duration) error {
	tb.Helper()
	select {
	case err := <-s.done:
		s.done <- err // let cleanup see it too
		return err
	case <-time.After(d):
		tb.Fatalf("Run did not return within %v", d)
		return nil
	}
}

// handlers used across tests.

func echoHandler() executor.Handler {
	return executor.HandlerFunc(func(_ context.Context, t *executor.Task) (executor.Result, error) {
		return executor.Result{Out: t.Args}, nil
	})
}

// blockHandler blocks until its context is done or release is closed, and
// reports the context's cause on causes.
func blockHandler(release <-chan struct{}, causes chan<- error) executor.Handler {
	return executor.HandlerFunc(func(ctx context.Context, t *executor.Task) (executor.Result, error) {
		select {
		case <-ctx.Done():
			causes <- context.Cause(ctx)
			return executor.Result{}, ctx.Err()
		case <-release:
			causes <- nil
			return executor.Result{Out: map[string]string{"done": "yes"}}, nil
		}
	})
}

func wrap(err error) error { return fmt.Errorf("wrapped: %w", err) }

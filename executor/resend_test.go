package executor_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/wire"
)

// readOneWrite reads what arrives in a single read and decodes its frames.
func readOneWrite(t *testing.T, c *fakeConn) []*wire.Message {
	t.Helper()
	require.NoError(t, c.Net.SetReadDeadline(time.Now().Add(waitFor)))
	buf := make([]byte, 64<<10)
	n, err := c.Net.Read(buf)
	require.NoError(t, err)
	var d wire.Decoder
	var msgs []*wire.Message
	for b := buf[:n]; len(b) > 0; {
		m, used, err := d.Decode(b)
		require.NoError(t, err)
		require.NotNil(t, m, "a partial frame in one write")
		msgs = append(msgs, m.Clone())
		b = b[used:]
	}
	return msgs
}

func types(msgs []*wire.Message) []string {
	var ts []string
	for _, m := range msgs {
		ts = append(ts, m.Type()+" "+m.Value("task_id")+"."+m.Value("version"))
	}
	return ts
}

func TestExecutor_ResendAfterReconnect(t *testing.T) {
	f := mustStartFakeMain(t)
	release := make(chan struct{})
	causes := make(chan error, 4)
	mustRun(t, f, executor.Config{Slots: 4, Handlers: map[string]executor.Handler{
		"block": blockHandler(release, causes), "echo": echoHandler()}})
	c := f.accept(t)
	c.registerQuiet()

	c.sendTask(1, 1, "echo", "arg.k", "v") // finishes, never acked
	c.expectStarted(1, 1)
	c.expectResult(1, 1)
	c.sendTask(2, 1, "echo") // finishes, refused: never re-sent
	c.expectStarted(2, 1)
	c.expectResult(2, 1)
	c.send("result_ack", "task_id", "2", "version", "1", "accepted", "false", "reason", "stale")
	c.sendTask(3, 1, "echo") // finishes, accepted: never re-sent
	c.expectStarted(3, 1)
	c.expectResult(3, 1)
	c.ack(3, 1)
	c.sendTask(4, 1, "block") // still running across the reconnect
	c.expectStarted(4, 1)
	c.sendTask(5, 1, "block") // cancelled and ignoring it: not re-announced
	c.expectStarted(5, 1)
	c.send("cancel", "task_id", "5", "version", "1")
	require.ErrorIs(t, <-causes, executor.ErrCancelled)
	c.expectNothing(50 * time.Millisecond) // the acks have been processed
	c.Net.Close()

	c2 := f.accept(t)
	c2.expect("register")
	c2.send("registered", "executor_id", "exec-1", "heartbeat_ms", "60000", "timeout_ms", "180000", "state_version", "0")
	msgs := readOneWrite(t, c2)
	assert.Equal(t, []string{"started 4.1", "started 1.1", "result 1.1"}, types(msgs),
		"running tasks re-announced, then each unacked result preceded by its started, in one write")
	assert.Equal(t, "v", msgs[2].Value("out.k"))
	c2.ack(1, 1)

	close(release)
	c2.expectResult(4, 1) // finished on the new connection
	c2.ack(4, 1)
	c2.expectNothing(100 * time.Millisecond)

	// A third connection gets nothing to resend.
	c2.Net.Close()
	c3 := f.accept(t)
	c3.register(20*time.Millisecond, time.Minute)
	m, err := c3.read(true, waitFor)
	require.NoError(t, err)
	assert.Equal(t, "heartbeat", m.Type())
}

func TestExecutor_ResultWhileDisconnected(t *testing.T) {
	f := mustStartFakeMain(t)
	release := make(chan struct{})
	causes := make(chan error, 1)
	mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"block": blockHandler(release, causes)},
		BackoffMin: 200 * time.Millisecond, BackoffMax: 200 * time.Millisecond})
	c := f.accept(t)
	c.registerQuiet()
	c.sendTask(1, 1, "block")
	c.expectStarted(1, 1)
	c.Net.Close()
	time.Sleep(20 * time.Millisecond) // the executor sees the close before the handler returns
	close(release)
	require.NoError(t, <-causes)

	c2 := f.accept(t)
	c2.register(20*time.Millisecond, time.Minute)
	m, err := c2.read(true, waitFor)
	require.NoError(t, err)
	assert.Equal(t, "started", m.Type())
	m, err = c2.read(true, waitFor)
	require.NoError(t, err)
	assert.Equal(t, "result", m.Type())
	assert.Equal(t, "succeeded", m.Value("status"))
	m, err = c2.read(true, waitFor)
	require.NoError(t, err)
	assert.Equal(t, "heartbeat", m.Type(), "the first heartbeat comes after the resend")
}

func TestExecutor_ResendReplacedWhenMaxFrameShrinks(t *testing.T) {
	// A result encoded for a 1 MiB main control no longer fits after a
	// restart with a smaller max_frame: it is re-sent as "result too large".
	big := strings.Repeat("x", 2000)
	f := mustStartFakeMain(t)
	mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"big": executor.HandlerFunc(
		func(context.Context, *executor.Task) (executor.Result, error) {
			return executor.Result{Out: map[string]string{"big": big}}, nil
		})}})
	c := f.accept(t)
	c.registerQuiet()
	c.sendTask(1, 1, "big")
	c.expectStarted(1, 1)
	assert.Equal(t, "succeeded", c.expectResult(1, 1).Value("status"))

	// The main control comes back with a smaller frame limit.
	f.SetMaxFrame(1024)
	c.Net.Close()
	c2 := f.accept(t)
	c2.registerQuiet()
	c2.expectStarted(1, 1)
	m := c2.expectResult(1, 1)
	assert.Equal(t, "failed", m.Value("status"))
	assert.Equal(t, "result too large", m.Value("error"))
}

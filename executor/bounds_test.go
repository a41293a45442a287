package executor_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/internal/fakemain"
	"github.com/apollo11/apollo11/wire"
)

// bigArg is an argument that makes an echo result of about 1 MB: 17 of
// them pass the executor's bound of max(16 MiB, 4 x max_frame).
var bigArg = strings.Repeat("x", 1_000_000)

// A main control that does not read would make the executor queue output
// for ever (until timeout_ms, which the main control chooses): past
// max(16 MiB, 4 x max_frame) unsent, the executor closes the connection,
// as the main control does to its own peers (docs/protocol.md, "Bounded
// buffers"), and re-sends the results on the next one.
func TestExecutor_ClosesWhenMainControlDoesNotRead(t *testing.T) {
	f := mustStartFakeMain(t)
	const tasks = 24
	s := mustRun(t, f, executor.Config{Slots: tasks, Dial: f.pipeDial, // no socket buffers
		Handlers: map[string]executor.Handler{"echo": echoHandler()}})
	c := f.accept(t)
	c.registerQuiet()
	for i := range uint64(tasks) {
		// Raw writes: once the executor gives up on us they fail.
		_ = fakemain.WriteMsg(c.Net, "task", "task_id", u(i+1), "version", "1", "task_type", "echo",
			"attempt", "1", "max_attempts", "3", "timeout_ms", "0", "trace_id", "t", "state_version", "0",
			"arg.x", bigArg)
	}
	rec := s.logs.eventually(t, "connection to the main control lost")
	assert.Contains(t, rec["err"], "the main control does not read")

	c2 := f.accept(t)
	c2.registerQuiet()
	var second map[string]any
	require.Eventually(t, func() bool {
		seen := 0
		for _, r := range s.logs.records() {
			if r["msg"] == "registered" {
				if seen++; seen == 2 {
					second = r
				}
			}
		}
		return second != nil
	}, waitFor, 5*time.Millisecond)
	n := int(second["resent_results"].(float64))
	// More than the bound itself: the backlog a connection starts with is
	// not the peer's doing and does not count against it.
	assert.GreaterOrEqual(t, n, 17, "the results are kept and re-sent")
	for range n {
		c2.expect("started")
		m := c2.expect("result")
		assert.Equal(t, bigArg, m.Value("out.x"))
	}
}

// A main control that reads but never sends result_ack would make the
// executor keep every result: past max(16 MiB, 4 x max_frame) of them, it
// takes no new task (as when no slot is free) until acks come.
func TestExecutor_RefusesTasksWhileResultsAwaitAck(t *testing.T) {
	f := mustStartFakeMain(t)
	s := mustRun(t, f, executor.Config{Handlers: map[string]executor.Handler{"echo": echoHandler()}})
	c := f.accept(t)
	c.registerQuiet()
	frames := make(chan *wire.Message, 4)
	quit, exited := make(chan struct{}), make(chan struct{})
	go func() { // reads everything, acks nothing
		defer close(exited)
		for {
			m, err := c.read(false, time.Minute)
			if err != nil {
				return
			}
			select {
			case frames <- m:
			case <-quit:
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(quit)
		c.Net.Close()
		<-exited
	})
	// started reports whether task id was started (its result read) rather
	// than refused.
	started := func(id uint64) bool {
		t.Helper()
		deadline := time.Now().Add(waitFor)
		for time.Now().Before(deadline) {
			select {
			case m := <-frames:
				require.Equal(t, "started", m.Type())
				m = <-frames
				require.Equal(t, "result", m.Type())
				require.Equal(t, u(id), m.Value("task_id"))
				return true
			case <-time.After(5 * time.Millisecond):
			}
			if r := s.logs.find("task not started"); r != nil {
				require.EqualValues(t, id, r["task_id"])
				assert.Equal(t, "too many results await result_ack", r["reason"])
				return false
			}
		}
		t.Fatalf("task %d neither started nor refused", id)
		return false
	}
	id := uint64(0)
	for {
		id++
		c.sendTask(id, 1, "echo", "arg.x", bigArg)
		if !started(id) {
			break
		}
		require.Less(t, id, uint64(40), "tasks still taken past the bound")
	}
	assert.Greater(t, id, uint64(16), "not refused before the bound")

	for i := uint64(1); i < id; i++ {
		c.ack(i, 1)
	}
	c.sendTask(id, 2, "echo") // handled after the acks: one reader, in order
	select {
	case m := <-frames:
		assert.Equal(t, "started", m.Type())
	case <-time.After(waitFor):
		t.Fatal("not started after the acks")
	}
}

package maincontrol_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/wire"
)

// Executor liveness over real sockets with short timeouts: loss, bye,
// reconciliation of running= lists, start and task timeouts.

func shortTimeouts() core.Config {
	return core.Config{HeartbeatTimeout: 600 * time.Millisecond, HeartbeatInterval: 200 * time.Millisecond,
		RetryBase: 20 * time.Millisecond}
}

// tasksByID reads n task frames, in any order.
func tasksByID(p *rawPeer, n int) map[string]*wire.Message {
	p.t.Helper()
	got := map[string]*wire.Message{}
	for i := 0; i < n; i++ {
		m := p.expectTask(0)
		got[m.Value("task_id")] = m
	}
	return got
}

func TestExecutors_LossRedispatches(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{Core: shortTimeouts()})
	cl := clientPeer(t, addr)
	e1 := dialRaw(t, addr)
	reg := e1.request("register", "executor_id", "e1", "task_types", "t", "slots", "2")
	require.Equal(t, "registered", reg.Type())
	assert.Equal(t, "200", reg.Value("heartbeat_ms"))
	assert.Equal(t, "600", reg.Value("timeout_ms"))

	running := cl.submit("a", "task_type", "t", "wait", "true")
	dispatched := cl.submit("b", "task_type", "t")
	ta := e1.expectTask(running)
	tb := e1.expectTask(dispatched)
	silentSince := time.Now() // started is the last frame e1 sends
	e1.start(ta)
	require.Equal(t, "running", cl.waitState(running, "running", time.Second).Value("state"))

	// e1 goes silent: lost after timeout_ms, its connection closed.
	e1.expectClosed()
	assert.GreaterOrEqual(t, time.Since(silentSince), 550*time.Millisecond, "lost before timeout_ms")
	st := cl.waitState(running, "pending", 5*time.Second)
	assert.Equal(t, "1", st.Value("attempt"))
	assert.Contains(t, st.Value("error"), "lost")
	st = cl.query(dispatched)
	assert.Equal(t, "pending", st.Value("state"))
	assert.Equal(t, "1", st.Value("attempt"))
	assert.Equal(t, "0", cl.request("stats", "req", "s").Value("executors"))

	// Another executor gets both: the running one with its next attempt,
	// the dispatched one with the same attempt.
	e2 := executorPeer(t, addr, "e2", "t", 2)
	got := tasksByID(e2, 2)
	a2, b2 := got[u(running)], got[u(dispatched)]
	require.NotNil(t, a2)
	require.NotNil(t, b2)
	assert.Equal(t, "2", a2.Value("version"))
	assert.Equal(t, "2", a2.Value("attempt"))
	assert.Equal(t, "2", b2.Value("version"))
	assert.Equal(t, "1", b2.Value("attempt"))

	// e1 comes back; its late result and started are stale. (e2 says
	// something between steps: it must not be lost meanwhile.)
	e2.aliveExec(1)
	e1 = executorPeer(t, addr, "e1", "t", 2)
	e1.start(tb)
	ack := e1.finish(ta, "status", "succeeded", "out.late", "1")
	assert.Equal(t, "false", ack.Value("accepted"))
	assert.Equal(t, "stale", ack.Value("reason"))
	e2.aliveExec(2)
	assert.Equal(t, "dispatched", cl.stateOf(dispatched))

	e2.start(a2)
	assert.Equal(t, "true", e2.finish(a2, "status", "succeeded", "out.by", "e2").Value("accepted"))
	d := cl.expect("done")
	assert.Equal(t, "succeeded", d.Value("state"))
	assert.Equal(t, "e2", d.Value("out.by"))
	assert.False(t, d.Has("out.late"))
}

func TestExecutors_HeartbeatsKeepAlive(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{Core: shortTimeouts()})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "hb-1", "t", 1)
	id := cl.submit("s", "task_type", "t")
	task := ex.expectTask(id)
	ex.start(task)
	token := task.Value("task_id") + "." + task.Value("version")
	// Every 100 ms (half of heartbeat_ms, for slack on a loaded host) for
	// 1.5 s, well past timeout_ms.
	for seq := 1; seq <= 15; seq++ {
		time.Sleep(100 * time.Millisecond)
		m := ex.request("heartbeat", "seq", u(uint64(seq)), "running", token)
		require.Equal(t, "pong", m.Type(), "got %s", m)
	}
	assert.Equal(t, "running", cl.stateOf(id))
	assert.Equal(t, "true", ex.finish(task, "status", "succeeded").Value("accepted"))
}

func TestExecutors_RunningListReconciliation(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{Core: core.Config{RetryBase: 10 * time.Second}})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 2)

	t.Run("a listed token not dispatched here gets cancel", func(t *testing.T) {
		m := ex.request("heartbeat", "seq", "1", "running", "999.3")
		require.Equal(t, "pong", m.Type())
		c := ex.expect("cancel")
		assert.Equal(t, "999", c.Value("task_id"))
		assert.Equal(t, "3", c.Value("version"))
	})
	t.Run("listing a dispatched task starts it", func(t *testing.T) {
		id := cl.submit("l", "task_type", "t")
		task := ex.expectTask(id)
		ex.request("heartbeat", "seq", "2", "running", u(id)+"."+task.Value("version"))
		assert.Equal(t, "running", cl.stateOf(id))
		assert.Equal(t, "true", ex.finish(task, "status", "succeeded").Value("accepted"))
	})
	t.Run("missing from two lists: cancelled and retried", func(t *testing.T) {
		id := cl.submit("m", "task_type", "t")
		task := ex.expectTask(id)
		ex.start(task)
		assert.Equal(t, "pong", ex.request("heartbeat", "seq", "3", "running", "").Type())
		assert.Equal(t, "running", cl.stateOf(id), "one list is not enough")
		assert.Equal(t, "pong", ex.request("heartbeat", "seq", "4", "running", "").Type())
		c := ex.expect("cancel")
		assert.Equal(t, u(id), c.Value("task_id"))
		assert.Equal(t, task.Value("version"), c.Value("version"))
		st := cl.query(id)
		assert.Equal(t, "retrying", st.Value("state"))
		ack := ex.finish(task, "status", "succeeded")
		assert.Equal(t, "stale", ack.Value("reason"))
	})
}

func TestExecutors_Bye(t *testing.T) {
	t.Parallel()
	// A 10 s retry base: only bye's "no retry delay" can requeue in time.
	addr := startServer(t, maincontrol.Config{Core: core.Config{RetryBase: 10 * time.Second}})
	cl := clientPeer(t, addr)
	e1 := executorPeer(t, addr, "e1", "t", 3)
	running := cl.submit("a", "task_type", "t")
	dispatched := cl.submit("b", "task_type", "t")
	last := cl.submit("c", "task_type", "t", "max_attempts", "1", "wait", "true")
	got := tasksByID(e1, 3)
	e1.start(got[u(running)])
	e1.start(got[u(last)])
	e1.aliveExec(1)

	m := e1.request("bye", "reason", "deploy")
	assert.Equal(t, "bye_ack", m.Type())
	e1.expectClosed()

	d := cl.expect("done")
	assert.Equal(t, u(last), d.Value("task_id"))
	assert.Equal(t, "failed", d.Value("state"), "no attempts left")
	st := cl.query(running)
	assert.Equal(t, "pending", st.Value("state"), "retried at once, no delay")
	assert.Equal(t, "1", st.Value("attempt"))
	st = cl.query(dispatched)
	assert.Equal(t, "pending", st.Value("state"))
	assert.Equal(t, "1", st.Value("attempt"))

	e2 := executorPeer(t, addr, "e2", "t", 2)
	got = tasksByID(e2, 2)
	assert.Equal(t, "2", got[u(running)].Value("attempt"), "the running one used an attempt")
	assert.Equal(t, "1", got[u(dispatched)].Value("attempt"), "the dispatched one did not")
}

func TestExecutors_StartAndTaskTimeouts(t *testing.T) {
	t.Parallel()
	cfg := core.Config{StartTimeout: 500 * time.Millisecond, RetryBase: 10 * time.Millisecond}
	addr := startServer(t, maincontrol.Config{Core: cfg})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 1)

	t.Run("start timeout", func(t *testing.T) {
		id := cl.submit("s", "task_type", "t")
		task := ex.expectTask(id)
		c := ex.expect("cancel") // never started
		assert.Equal(t, u(id), c.Value("task_id"))
		assert.Equal(t, task.Value("version"), c.Value("version"))
		again := ex.expectTask(id)
		assert.Equal(t, "2", again.Value("version"))
		assert.Equal(t, "1", again.Value("attempt"), "no attempt used")
		ex.start(again)
		assert.Equal(t, "stale", ex.finish(task, "status", "succeeded").Value("reason"))
		assert.Equal(t, "true", ex.finish(again, "status", "succeeded").Value("accepted"))
	})
	t.Run("task timeout", func(t *testing.T) {
		id := cl.submit("s", "task_type", "t", "timeout_ms", "300", "max_attempts", "2", "wait", "true")
		task := ex.expectTask(id)
		ex.start(task)
		c := ex.expect("cancel")
		assert.Equal(t, task.Value("version"), c.Value("version"))
		again := ex.expectTask(id)
		assert.Equal(t, "2", again.Value("attempt"))
		ex.start(again)
		c = ex.expect("cancel")
		assert.Equal(t, again.Value("version"), c.Value("version"))
		d := cl.expect("done")
		assert.Equal(t, "failed", d.Value("state"))
		assert.True(t, strings.HasPrefix(d.Value("error"), "timeout"), d.Value("error"))
	})
}

// A connection that drops is not a loss: an executor that registers again
// within timeout_ms and lists its running task keeps it.
func TestExecutors_ReconnectKeepsTasks(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{Core: core.Config{HeartbeatTimeout: 3 * time.Second}})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 1)
	id := cl.submit("s", "task_type", "t", "wait", "true")
	task := ex.expectTask(id)
	ex.start(task)
	require.NoError(t, ex.c.Close())
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, "running", cl.stateOf(id))
	assert.Equal(t, "0", cl.request("stats", "req", "s").Value("executors"))

	ex = executorPeer(t, addr, "e1", "t", 1)
	token := u(id) + "." + task.Value("version")
	for seq := 1; seq <= 3; seq++ {
		assert.Equal(t, "pong", ex.request("heartbeat", "seq", u(uint64(seq)), "running", token).Type())
	}
	assert.Equal(t, "running", cl.stateOf(id))
	assert.Equal(t, "true", ex.finish(task, "status", "succeeded", "out.r", "ok").Value("accepted"))
	d := cl.expect("done")
	assert.Equal(t, "succeeded", d.Value("state"))
	assert.Equal(t, "ok", d.Value("out.r"))
}

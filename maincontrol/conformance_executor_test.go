package maincontrol_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/wire"
)

func TestConformance_Register(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		core              core.Config
		heartbeat, timout string
	}{
		{"defaults", core.Config{}, "5000", "15000"},
		{"a third of the timeout, rounded down", core.Config{HeartbeatTimeout: 10 * time.Second}, "3333", "10000"},
		{"explicit interval", core.Config{HeartbeatTimeout: 9 * time.Second, HeartbeatInterval: 4 * time.Second}, "4000", "9000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := startServer(t, maincontrol.Config{Core: tc.core})
			p := dialRaw(t, addr)
			p.send("register", "proto", "1", "executor_id", "Ex-1:a.b_c", "task_types", "a,b", "slots", "2")
			m := p.expect("registered")
			assertKeys(t, m, "type", "executor_id", "heartbeat_ms", "timeout_ms", "state_version")
			assert.Equal(t, "Ex-1:a.b_c", m.Value("executor_id"))
			assert.Equal(t, tc.heartbeat, m.Value("heartbeat_ms"))
			assert.Equal(t, tc.timout, m.Value("timeout_ms"))
			assert.Equal(t, "0", m.Value("state_version"))
		})
	}

	t.Run("state_version is the current one", func(t *testing.T) {
		addr := startServer(t, maincontrol.Config{})
		cl := clientPeer(t, addr)
		ex := executorPeer(t, addr, "e1", "t", 1)
		for i := 1; i <= 2; i++ {
			cl.submit("s", "task_type", "t")
			task := ex.expectTask(0)
			assert.Equal(t, strconv.Itoa(i-1), task.Value("state_version"), "task frames carry the current state_version")
			ex.start(task)
			ack := ex.finish(task, "status", "succeeded", "state.add.n", "1")
			require.Equal(t, "true", ack.Value("accepted"))
		}
		ex2 := dialRaw(t, addr)
		ex2.send("register", "executor_id", "e2", "task_types", "t")
		assert.Equal(t, "2", ex2.expect("registered").Value("state_version"))
	})

	t.Run("slots default to 1", func(t *testing.T) {
		addr := startServer(t, maincontrol.Config{})
		cl := clientPeer(t, addr)
		ex := dialRaw(t, addr)
		ex.send("register", "executor_id", "e1", "task_types", "t")
		ex.expect("registered")
		a := cl.submit("a", "task_type", "t")
		b := cl.submit("b", "task_type", "t")
		task := ex.expectTask(a)
		assert.Equal(t, "pending", cl.stateOf(b), "one slot: the second task waits")
		ex.start(task)
		ex.finish(task, "status", "succeeded")
		ex.expectTask(b)
	})
}

func TestConformance_Hello(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	tests := []struct {
		name string
		kv   []string
		req  string
	}{
		{"req echoed", []string{"req", "r-1"}, "r-1"},
		{"escaped req echoed", []string{"req", "a=b\nc\\d"}, "a=b\nc\\d"},
		{"req of 64 bytes", []string{"req", strings.Repeat("x", 64)}, strings.Repeat("x", 64)},
		{"no req", nil, ""},
		{"empty req echoed", []string{"req", ""}, ""},
		{"client name and proto", []string{"req", "h", "client", "cli/1", "proto", "1"}, "h"},
		{"unknown keys ignored", []string{"req", "h", "future.key", "x"}, "h"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := dialRaw(t, addr)
			m := p.request("hello", tc.kv...)
			require.Equal(t, "hello_ok", m.Type(), "got %s", m)
			// admin=true: without an admin token every client may (8.2).
			if len(tc.kv) == 0 {
				assertKeys(t, m, "type", "admin")
			} else {
				assertKeys(t, m, "type", "req", "admin")
				assert.Equal(t, tc.req, m.Value("req"))
			}
			p.alive("after")
		})
	}
}

func TestConformance_HeartbeatPong(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	ex := executorPeer(t, addr, "e1", "t", 1)
	for _, seq := range []string{"1", "2", "42", "0", "18446744073709551615"} {
		t.Run("seq="+seq, func(t *testing.T) {
			m := ex.request("heartbeat", "seq", seq, "running", "")
			assertKeys(t, m, "type", "seq")
			assert.Equal(t, "pong", m.Type())
			assert.Equal(t, seq, m.Value("seq"))
		})
	}
	t.Run("running absent", func(t *testing.T) {
		m := ex.request("heartbeat", "seq", "7")
		assert.Equal(t, "pong", m.Type())
		assert.Equal(t, "7", m.Value("seq"))
	})
}

func TestConformance_Task(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "work", 4)

	t.Run("every key", func(t *testing.T) {
		id := cl.submit("s1", "task_type", "work", "priority", "5", "max_attempts", "4", "timeout_ms", "60000",
			"trace_id", "trace-1", "arg.x", "1", "arg.y", "a=b\nc\\d", "arg.empty", "")
		m := ex.expectTask(id)
		assertKeys(t, m, "type", "task_id", "version", "task_type", "attempt", "max_attempts", "timeout_ms",
			"trace_id", "state_version", "arg.x", "arg.y", "arg.empty")
		assert.Equal(t, "1", m.Value("version"), "first dispatch: version 1")
		assert.Equal(t, "1", m.Value("attempt"), "first dispatch: attempt 1")
		assert.Equal(t, "work", m.Value("task_type"))
		assert.Equal(t, "4", m.Value("max_attempts"))
		assert.Equal(t, "60000", m.Value("timeout_ms"))
		assert.Equal(t, "trace-1", m.Value("trace_id"))
		assert.Equal(t, "0", m.Value("state_version"))
		assert.Equal(t, "1", m.Value("arg.x"))
		assert.Equal(t, "a=b\nc\\d", m.Value("arg.y"))
		assert.Equal(t, "", m.Value("arg.empty"))
		ex.start(m)
		ex.finish(m, "status", "succeeded")
	})

	t.Run("defaults", func(t *testing.T) {
		id := cl.submit("s2", "task_type", "work")
		m := ex.expectTask(id)
		assertKeys(t, m, "type", "task_id", "version", "task_type", "attempt", "max_attempts", "timeout_ms",
			"trace_id", "state_version")
		assert.Equal(t, "3", m.Value("max_attempts"))
		assert.Equal(t, "0", m.Value("timeout_ms"))
		assert.NotEmpty(t, m.Value("trace_id"), "a trace id is made when none is given")
		assert.Equal(t, m.Value("trace_id"), cl.query(id).Value("trace_id"))
		ex.start(m)
		ex.finish(m, "status", "succeeded")
	})

	t.Run("priority first, then first in first out", func(t *testing.T) {
		// No executor takes "prio" yet: queue, then register.
		var ids []uint64
		for _, pr := range []string{"0", "9", "5", "9", "0"} {
			ids = append(ids, cl.submit("p"+pr, "task_type", "prio", "priority", pr))
		}
		px := executorPeer(t, addr, "prio-1", "prio", 5)
		want := []uint64{ids[1], ids[3], ids[2], ids[0], ids[4]}
		for _, id := range want {
			px.expectTask(id)
		}
	})
}

func TestConformance_StartedProgressResult(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 1)

	id := cl.submit("s", "task_type", "t")
	task := ex.expectTask(id)
	st := cl.query(id)
	assert.Equal(t, "dispatched", st.Value("state"))
	assert.Equal(t, "e1", st.Value("executor_id"))

	ex.start(task)
	ex.send("progress", "task_id", task.Value("task_id"), "version", task.Value("version"), "percent", "50", "note", "half way")
	ex.send("progress", "task_id", task.Value("task_id"), "version", task.Value("version"), "percent", "100")
	ex.aliveExec(1) // started and progress get no reply: pong is the next frame
	assert.Equal(t, "running", cl.stateOf(id))

	ack := ex.finish(task, "status", "succeeded", "out.answer", "42", "out.text", "x=y")
	assertKeys(t, ack, "type", "task_id", "version", "accepted")
	assert.Equal(t, "true", ack.Value("accepted"))
	st = cl.query(id)
	assert.Equal(t, "succeeded", st.Value("state"))
	assert.Equal(t, "42", st.Value("out.answer"))
	assert.Equal(t, "x=y", st.Value("out.text"))

	t.Run("started and result in one write", func(t *testing.T) {
		id := cl.submit("s2", "task_type", "t")
		task := ex.expectTask(id)
		var buf []byte
		for _, m := range []*wire.Message{
			wire.NewMessage("started").Set("task_id", task.Value("task_id")).Set("version", task.Value("version")),
			wire.NewMessage("result").Set("task_id", task.Value("task_id")).Set("version", task.Value("version")).Set("status", "succeeded"),
		} {
			var err error
			buf, err = wire.AppendFrame(buf, m)
			require.NoError(t, err)
		}
		ex.writeRaw(buf)
		assert.Equal(t, "true", ex.expect("result_ack").Value("accepted"))
		assert.Equal(t, "succeeded", cl.stateOf(id))
	})

	t.Run("a mismatched started is ignored", func(t *testing.T) {
		id := cl.submit("s3", "task_type", "t")
		task := ex.expectTask(id)
		ex.send("started", "task_id", task.Value("task_id"), "version", "7")
		ex.send("started", "task_id", "999", "version", "1")
		ex.aliveExec(2)
		assert.Equal(t, "dispatched", cl.stateOf(id))
		ex.start(task)
		ex.finish(task, "status", "succeeded")
	})
}

func TestConformance_ResultAck(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{Core: core.Config{RetryBase: 10 * time.Millisecond}})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 8)
	other := executorPeer(t, addr, "e2", "other", 1)

	// running dispatches a task to ex and starts it.
	running := func(req string, kv ...string) (uint64, *wire.Message) {
		id := cl.submit(req, append([]string{"task_type", "t"}, kv...)...)
		task := ex.expectTask(id)
		ex.start(task)
		return id, task
	}
	refused := func(t *testing.T, ack *wire.Message, reason string) {
		t.Helper()
		assertKeys(t, ack, "type", "task_id", "version", "accepted", "reason")
		assert.Equal(t, "false", ack.Value("accepted"))
		assert.Equal(t, reason, ack.Value("reason"))
	}

	t.Run("accepted failed, retryable by default", func(t *testing.T) {
		id, task := running("f1")
		ack := ex.finish(task, "status", "failed", "error", "boom", "out.partial", "p")
		assert.Equal(t, "true", ack.Value("accepted"))
		st := cl.query(id)
		assert.Contains(t, []string{"retrying", "pending", "dispatched"}, st.Value("state"))
		retry := ex.expectTask(id)
		assert.Equal(t, "2", retry.Value("attempt"))
		assert.Equal(t, "2", retry.Value("version"))
		ex.start(retry)
		ex.finish(retry, "status", "succeeded")
	})
	t.Run("accepted failed, not retryable", func(t *testing.T) {
		id, task := running("f2")
		ack := ex.finish(task, "status", "failed", "retryable", "false", "error", "bad input", "out.why", "w")
		assert.Equal(t, "true", ack.Value("accepted"))
		st := cl.query(id)
		assert.Equal(t, "failed", st.Value("state"))
		assert.Equal(t, "bad input", st.Value("error"))
		assert.Equal(t, "w", st.Value("out.why"))
	})
	t.Run("unknown_task", func(t *testing.T) {
		ack := ex.request("result", "task_id", "99999", "version", "1", "status", "succeeded")
		refused(t, ack, "unknown_task")
		assert.Equal(t, "99999", ack.Value("task_id"))
		assert.Equal(t, "1", ack.Value("version"))
	})
	t.Run("stale: wrong version", func(t *testing.T) {
		id, task := running("st1")
		ack := ex.request("result", "task_id", u(id), "version", "2", "status", "succeeded")
		refused(t, ack, "stale")
		assert.Equal(t, "running", cl.stateOf(id))
		ex.finish(task, "status", "succeeded")
	})
	t.Run("stale: another executor", func(t *testing.T) {
		id, task := running("st2")
		ack := other.request("result", "task_id", u(id), "version", task.Value("version"), "status", "succeeded")
		refused(t, ack, "stale")
		assert.Equal(t, "running", cl.stateOf(id))
		ex.finish(task, "status", "succeeded")
	})
	t.Run("cancelled", func(t *testing.T) {
		id, task := running("c1")
		m := cl.request("cancel", "req", "c", "task_id", u(id))
		require.Equal(t, "cancelled", m.Type(), "got %s", m)
		ex.expect("cancel")
		refused(t, ex.finish(task, "status", "succeeded", "out.x", "1"), "cancelled")
		st := cl.query(id)
		assert.Equal(t, "cancelled", st.Value("state"))
		assert.False(t, st.Has("out.x"), "a refused result is not applied")
	})
	t.Run("illegal_transition: not started", func(t *testing.T) {
		id := cl.submit("it", "task_type", "t")
		task := ex.expectTask(id)
		refused(t, ex.finish(task, "status", "succeeded"), "illegal_transition")
		assert.Equal(t, "dispatched", cl.stateOf(id))
		ex.start(task)
		ex.finish(task, "status", "succeeded")
	})
	t.Run("illegal_transition: already ended", func(t *testing.T) {
		_, task := running("it2")
		ex.finish(task, "status", "succeeded")
		// The dispatch is still the task's latest: not stale, but ended.
		ack := ex.finish(task, "status", "succeeded")
		assert.Equal(t, "false", ack.Value("accepted"))
		assert.Contains(t, []string{"illegal_transition", "stale"}, ack.Value("reason"))
	})

	// Set up: word=hello, big=max int64.
	_, setup := running("setup")
	ack := ex.finish(setup, "status", "succeeded", "state.set.word", "hello", "state.set.big", "9223372036854775807")
	require.Equal(t, "true", ack.Value("accepted"))
	illegal := []struct {
		name string
		kv   []string
		key  string
	}{
		{"add not an integer", []string{"state.add.n", "abc"}, "state.add.n"},
		{"add with plus sign", []string{"state.add.n", "+1"}, "state.add.n"},
		{"add overflows int64", []string{"state.set.ok", "1", "state.add.big", "1"}, "state.add.big"},
		{"add out of int64", []string{"state.add.n", "9223372036854775808"}, "state.add.n"},
		{"set and add of one key", []string{"state.set.k", "1", "state.add.k", "1"}, "state.set.k"},
		{"add to a non-integer value", []string{"state.add.word", "1"}, "state.add.word"},
	}
	for _, tc := range illegal {
		t.Run("illegal_value: "+tc.name, func(t *testing.T) {
			before := cl.request("state_get", "req", "sg")
			id, task := running("iv")
			refused(t, ex.finish(task, append([]string{"status", "succeeded", "out.x", "1"}, tc.kv...)...), "illegal_value")
			st := cl.query(id)
			assert.Equal(t, "failed", st.Value("state"), "illegal_value fails the task, without retry")
			assert.Equal(t, "illegal_value "+tc.key, st.Value("error"))
			assert.False(t, st.Has("out.x"))
			after := cl.request("state_get", "req", "sg")
			assert.Equal(t, before.Fields, after.Fields, "nothing of a refused result is applied")
		})
	}
	t.Run("illegal_value frees the slot", func(t *testing.T) {
		// ex has 8 slots and all its tasks ended: 8 new ones are dispatched.
		for i := 0; i < 8; i++ {
			cl.submit("fill", "task_type", "t")
		}
		tasks := make([]*wire.Message, 8)
		for i := range tasks {
			tasks[i] = ex.expectTask(0)
		}
		for _, task := range tasks {
			ex.start(task)
			ex.finish(task, "status", "succeeded")
		}
	})
	t.Run("state.* of a failed result ignored", func(t *testing.T) {
		before := cl.request("state_get", "req", "sg")
		_, task := running("fs", "max_attempts", "1")
		ack := ex.finish(task, "status", "failed", "state.add.word", "x", "state.set.new", "1")
		assert.Equal(t, "true", ack.Value("accepted"))
		after := cl.request("state_get", "req", "sg")
		assert.Equal(t, before.Fields, after.Fields)
	})
}

func TestConformance_StateGet(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 1)
	cl.submit("s", "task_type", "t")
	task := ex.expectTask(0)
	ex.start(task)
	ex.finish(task, "status", "succeeded", "state.set.a", "1", "state.set.b", "x=y\nz", "state.add.n", "-5", "state.set.empty", "")

	tests := []struct {
		name string
		kv   []string
		want map[string]string
	}{
		{"every key", nil, map[string]string{"a": "1", "b": "x=y\nz", "n": "-5", "empty": ""}},
		{"empty keys means every key", []string{"keys", ""}, map[string]string{"a": "1", "b": "x=y\nz", "n": "-5", "empty": ""}},
		{"filter, unset keys left out", []string{"keys", "a,nope,n"}, map[string]string{"a": "1", "n": "-5"}},
		{"only unset keys", []string{"keys", "nope"}, map[string]string{}},
	}
	for _, peer := range []struct {
		name string
		p    *rawPeer
	}{{"client", cl}, {"executor", ex}} {
		for _, tc := range tests {
			t.Run(peer.name+"/"+tc.name, func(t *testing.T) {
				m := peer.p.request("state_get", append([]string{"req", "g1"}, tc.kv...)...)
				require.Equal(t, "state", m.Type(), "got %s", m)
				keys := []string{"type", "req", "state_version"}
				for k, v := range tc.want {
					keys = append(keys, "state."+k)
					assert.Equal(t, v, m.Value("state."+k))
				}
				assertKeys(t, m, keys...)
				assert.Equal(t, "g1", m.Value("req"))
				assert.Equal(t, "1", m.Value("state_version"), "one accepted result with state changes")
			})
		}
	}
	t.Run("executor without req", func(t *testing.T) {
		m := ex.request("state_get", "keys", "a")
		assertKeys(t, m, "type", "state_version", "state.a")
	})
	t.Run("a bad keys list is bad_request", func(t *testing.T) {
		cl.send("state_get", "req", "bad", "keys", "a,,b")
		cl.expectError(wire.CodeBadRequest, "bad")
		cl.alive("ok")
	})
}

func TestConformance_Bye(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	for _, kv := range [][]string{nil, {"reason", "shutting down"}} {
		ex := executorPeer(t, addr, "e1", "t", 1)
		m := ex.request("bye", kv...)
		assertKeys(t, m, "type")
		assert.Equal(t, "bye_ack", m.Type())
		ex.expectClosed()
	}
	// Re-registering after a bye is normal.
	executorPeer(t, addr, "e1", "t", 1).aliveExec(1)
}

func TestConformance_CancelToExecutor(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 2)
	for _, started := range []bool{false, true} {
		name := "dispatched"
		if started {
			name = "running"
		}
		t.Run(name, func(t *testing.T) {
			id := cl.submit("s", "task_type", "t")
			task := ex.expectTask(id)
			if started {
				ex.start(task)
			}
			m := cl.request("cancel", "req", "c-"+name, "task_id", u(id))
			assertKeys(t, m, "type", "req", "task_id")
			assert.Equal(t, "cancelled", m.Type())
			assert.Equal(t, "c-"+name, m.Value("req"))
			assert.Equal(t, u(id), m.Value("task_id"))
			c := ex.expect("cancel")
			assertKeys(t, c, "type", "task_id", "version")
			assert.Equal(t, u(id), c.Value("task_id"))
			assert.Equal(t, task.Value("version"), c.Value("version"))
			assert.Equal(t, "cancelled", cl.stateOf(id))
		})
	}
	t.Run("pending: no cancel to anyone", func(t *testing.T) {
		id := cl.submit("s", "task_type", "nobody")
		m := cl.request("cancel", "req", "c", "task_id", u(id))
		assert.Equal(t, "cancelled", m.Type())
		ex.aliveExec(1) // pong, not cancel, is the executor's next frame
	})
}

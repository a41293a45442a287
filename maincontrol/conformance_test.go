package maincontrol_test

import (
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/wire"
)

// The conformance suite: every message of wire-v1 sections 3 to 5, over
// real loopback sockets, checked key by key.

var lowerHex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestConformance_Welcome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		core     core.Config
		server   string
		auth     string
		maxFrame string
	}{
		{"defaults", core.Config{}, "apollo11/dev", "none", "1048576"},
		{"version and max frame", core.Config{Version: "1.2.3", MaxFrame: 4096}, "apollo11/1.2.3", "none", "4096"},
		{"token", core.Config{Token: []byte("s3cret")}, "apollo11/dev", "hmac-sha256", "1048576"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := startServer(t, maincontrol.Config{Core: tc.core})
			seen := map[string]bool{}
			for i := 0; i < 10; i++ {
				w := dialRaw(t, addr).hello
				assertKeys(t, w, "type", "proto", "server", "nonce", "auth", "max_frame", "features")
				assert.Equal(t, "1", w.Value("proto"))
				assert.Equal(t, tc.server, w.Value("server"))
				assert.Equal(t, tc.auth, w.Value("auth"))
				assert.Equal(t, tc.maxFrame, w.Value("max_frame"))
				nonce := w.Value("nonce")
				assert.Regexp(t, lowerHex32, nonce)
				assert.False(t, seen[nonce], "nonce %s repeated", nonce)
				seen[nonce] = true
			}
		})
	}
}

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

func TestConformance_SubmitDone(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 4)

	t.Run("submitted", func(t *testing.T) {
		m := cl.request("submit", "req", "r1", "task_type", "none")
		assertKeys(t, m, "type", "req", "task_id")
		assert.Equal(t, "submitted", m.Type())
		first := assertUint(t, m, "task_id")
		m = cl.request("submit", "req", "r2", "task_type", "none")
		assert.Equal(t, first+1, assertUint(t, m, "task_id"), "ids grow by one")
	})
	t.Run("duplicate key", func(t *testing.T) {
		id := cl.submit("k1", "task_type", "none", "key", "idem-1")
		m := cl.request("submit", "req", "k2", "task_type", "other", "key", "idem-1")
		assertKeys(t, m, "type", "req", "task_id", "duplicate")
		assert.Equal(t, "k2", m.Value("req"))
		assert.Equal(t, u(id), m.Value("task_id"))
		assert.Equal(t, "true", m.Value("duplicate"))
		assert.Equal(t, "none", cl.query(id).Value("task_type"), "the duplicate created nothing")
	})
	t.Run("done succeeded", func(t *testing.T) {
		m := cl.request("submit", "req", "w1", "task_type", "t", "wait", "true")
		require.Equal(t, "submitted", m.Type())
		id := assertUint(t, m, "task_id")
		task := ex.expectTask(id)
		ex.start(task)
		ex.finish(task, "status", "succeeded", "out.a", "1", "out.b", "two")
		d := cl.expect("done")
		assertKeys(t, d, "type", "req", "task_id", "state", "out.a", "out.b")
		assert.Equal(t, "w1", d.Value("req"), "done carries its submit's req")
		assert.Equal(t, u(id), d.Value("task_id"))
		assert.Equal(t, "succeeded", d.Value("state"))
		assert.Equal(t, "1", d.Value("out.a"))
		assert.Equal(t, "two", d.Value("out.b"))
	})
	t.Run("done failed with error", func(t *testing.T) {
		id := cl.submit("w2", "task_type", "t", "wait", "true", "max_attempts", "1")
		task := ex.expectTask(id)
		ex.start(task)
		ex.finish(task, "status", "failed", "error", "it broke", "out.log", "l")
		d := cl.expect("done")
		assertKeys(t, d, "type", "req", "task_id", "state", "out.log", "error")
		assert.Equal(t, "w2", d.Value("req"))
		assert.Equal(t, "failed", d.Value("state"))
		assert.Equal(t, "it broke", d.Value("error"))
	})
	t.Run("done cancelled, a duplicate waiter gets its own req", func(t *testing.T) {
		id := cl.submit("w3", "task_type", "none", "wait", "true", "key", "idem-w3")
		m := cl.request("submit", "req", "w3dup", "task_type", "none", "wait", "true", "key", "idem-w3")
		require.Equal(t, "true", m.Value("duplicate"))
		c := cl.request("cancel", "req", "c3", "task_id", u(id))
		// done frames and cancelled come in some order: match by req.
		got := map[string]string{}
		for _, m := range []*wire.Message{c, cl.recv(), cl.recv()} {
			got[m.Value("req")] = m.Type()
			if m.Type() == "done" {
				assert.Equal(t, "cancelled", m.Value("state"))
				assert.Equal(t, u(id), m.Value("task_id"))
			}
		}
		assert.Equal(t, map[string]string{"w3": "done", "w3dup": "done", "c3": "cancelled"}, got)
	})
	t.Run("duplicate of an ended task: done at once", func(t *testing.T) {
		m := cl.request("submit", "req", "again", "task_type", "none", "wait", "true", "key", "idem-w3")
		assert.Equal(t, "submitted", m.Type())
		assert.Equal(t, "true", m.Value("duplicate"))
		d := cl.expect("done")
		assert.Equal(t, "again", d.Value("req"))
		assert.Equal(t, "cancelled", d.Value("state"))
	})
	t.Run("depends_on", func(t *testing.T) {
		a := cl.submit("d1", "task_type", "none")
		b := cl.submit("d2", "task_type", "none", "depends_on", u(a)+","+u(a))
		assert.Equal(t, "waiting", cl.stateOf(b))
		cl.request("cancel", "req", "ca", "task_id", u(a))
		st := cl.query(b)
		assert.Equal(t, "cancelled", st.Value("state"))
		assert.Equal(t, "dependency "+u(a)+" cancelled", st.Value("error"))
		c := cl.submit("d3", "task_type", "none", "depends_on", u(a))
		st = cl.query(c)
		assert.Equal(t, "cancelled", st.Value("state"), "created, confirmed and cancelled at once")
		assert.Equal(t, "dependency "+u(a)+" cancelled", st.Value("error"))
	})
	t.Run("delay_ms", func(t *testing.T) {
		id := cl.submit("dl", "task_type", "t", "delay_ms", "200")
		assert.Equal(t, "pending", cl.stateOf(id))
		start := time.Now()
		task := ex.expectTask(id)
		assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "not dispatched before its time")
		ex.start(task)
		ex.finish(task, "status", "succeeded")
	})
}

func TestConformance_Query(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{Core: core.Config{RetryBase: 10 * time.Millisecond}})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 1)
	before := time.Now().UnixMilli()
	id := cl.submit("s", "task_type", "t", "max_attempts", "2", "trace_id", "tr")

	// The executor took it at once; query a task nobody takes too.
	pend := cl.submit("p", "task_type", "nobody")
	m := cl.query(pend)
	assertKeys(t, m, "type", "req", "task_id", "version", "state", "attempt", "max_attempts", "task_type",
		"created_ms", "updated_ms", "trace_id")
	assert.Equal(t, u(pend), m.Value("task_id"))
	assert.Equal(t, "0", m.Value("version"))
	assert.Equal(t, "pending", m.Value("state"))
	assert.Equal(t, "0", m.Value("attempt"))
	assert.Equal(t, "3", m.Value("max_attempts"))
	assert.Equal(t, "nobody", m.Value("task_type"))
	created := assertUint(t, m, "created_ms")
	assert.GreaterOrEqual(t, created, uint64(before))
	assert.LessOrEqual(t, created, uint64(time.Now().UnixMilli()))
	assert.GreaterOrEqual(t, assertUint(t, m, "updated_ms"), created)

	task := ex.expectTask(id)
	ex.start(task)
	ex.finish(task, "status", "failed", "error", "e=1", "out.o", "v")
	m = cl.waitState(id, "dispatched", 5*time.Second) // retried after its backoff
	assertKeys(t, m, "type", "req", "task_id", "version", "state", "attempt", "max_attempts", "task_type",
		"executor_id", "created_ms", "updated_ms", "trace_id")
	task = ex.expectTask(id)
	ex.start(task)
	ex.finish(task, "status", "failed", "error", "e=2", "out.o", "w")
	m = cl.query(id)
	assertKeys(t, m, "type", "req", "task_id", "version", "state", "attempt", "max_attempts", "task_type",
		"executor_id", "error", "out.o", "created_ms", "updated_ms", "trace_id")
	assert.Equal(t, "failed", m.Value("state"))
	assert.Equal(t, "2", m.Value("version"))
	assert.Equal(t, "2", m.Value("attempt"))
	assert.Equal(t, "2", m.Value("max_attempts"))
	assert.Equal(t, "t", m.Value("task_type"))
	assert.Equal(t, "e1", m.Value("executor_id"))
	assert.Equal(t, "e=2", m.Value("error"))
	assert.Equal(t, "w", m.Value("out.o"))
	assert.Equal(t, "tr", m.Value("trace_id"))
}

func TestConformance_List(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)
	var ids []uint64
	for i := 0; i < 5; i++ {
		ids = append(ids, cl.submit("s", "task_type", "t"))
	}
	cl.request("cancel", "req", "c", "task_id", u(ids[2]))
	pending := []uint64{ids[0], ids[1], ids[3], ids[4]}
	join := func(xs ...uint64) string {
		s := make([]string, len(xs))
		for i, x := range xs {
			s[i] = u(x)
		}
		return strings.Join(s, ",")
	}
	tests := []struct {
		name  string
		kv    []string
		count string
		ids   string
		next  string // "" : absent
	}{
		{"default limit", []string{"state", "pending"}, "4", join(pending...), ""},
		{"first page", []string{"state", "pending", "limit", "2"}, "2", join(pending[:2]...), u(pending[1])},
		{"last page, exactly full", []string{"state", "pending", "limit", "2", "after", u(pending[1])}, "2", join(pending[2:]...), ""},
		{"after the last", []string{"state", "pending", "after", u(ids[4])}, "0", "", ""},
		{"limit 1", []string{"state", "pending", "limit", "1", "after", u(ids[0])}, "1", u(ids[1]), u(ids[1])},
		{"limit 1000", []string{"state", "pending", "limit", "1000"}, "4", join(pending...), ""},
		{"cancelled", []string{"state", "cancelled"}, "1", u(ids[2]), ""},
		{"empty state", []string{"state", "running"}, "0", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := cl.request("list", append([]string{"req", "l"}, tc.kv...)...)
			require.Equal(t, "tasks", m.Type(), "got %s", m)
			if tc.next == "" {
				assertKeys(t, m, "type", "req", "count", "ids")
			} else {
				assertKeys(t, m, "type", "req", "count", "ids", "next")
				assert.Equal(t, tc.next, m.Value("next"))
			}
			assert.Equal(t, tc.count, m.Value("count"))
			assert.Equal(t, tc.ids, m.Value("ids"))
		})
	}
	for _, st := range []string{"waiting", "pending", "dispatched", "running", "retrying", "succeeded", "failed", "cancelled"} {
		m := cl.request("list", "req", "l", "state", st)
		assert.Equal(t, "tasks", m.Type(), "state %s: %s", st, m)
	}
}

func TestConformance_Stats(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)
	statesKeys := []string{"tasks.waiting", "tasks.pending", "tasks.dispatched", "tasks.running",
		"tasks.retrying", "tasks.succeeded", "tasks.failed", "tasks.cancelled"}
	check := func(t *testing.T, want map[string]string) {
		t.Helper()
		m := cl.request("stats", "req", "st")
		require.Equal(t, "stats", m.Type())
		assert.Equal(t, "st", m.Value("req"))
		for _, k := range append(statesKeys, "executors", "state_version", "uptime_ms") {
			assertUint(t, m, k)
		}
		for k, v := range want {
			assert.Equal(t, v, m.Value(k), k)
		}
	}
	t.Run("zeros included", func(t *testing.T) {
		want := map[string]string{"executors": "0", "state_version": "0"}
		for _, k := range statesKeys {
			want[k] = "0"
		}
		check(t, want)
	})
	t.Run("counts", func(t *testing.T) {
		ex := executorPeer(t, addr, "e1", "t", 1)
		executorPeer(t, addr, "e2", "u", 1)
		a := cl.submit("a", "task_type", "t")
		task := ex.expectTask(a)
		ex.start(task)
		ex.finish(task, "status", "succeeded", "state.set.k", "v")
		b := cl.submit("b", "task_type", "t")
		ex.expectTask(b)
		c := cl.submit("c", "task_type", "none")
		cl.submit("d", "task_type", "none", "depends_on", u(c))
		e := cl.submit("e", "task_type", "none")
		cl.request("cancel", "req", "x", "task_id", u(e))
		check(t, map[string]string{"tasks.succeeded": "1", "tasks.dispatched": "1", "tasks.pending": "1",
			"tasks.waiting": "1", "tasks.cancelled": "1", "tasks.running": "0", "tasks.failed": "0",
			"tasks.retrying": "0", "executors": "2", "state_version": "1"})
	})
	t.Run("uptime grows", func(t *testing.T) {
		m1 := cl.request("stats", "req", "1")
		time.Sleep(30 * time.Millisecond)
		m2 := cl.request("stats", "req", "2")
		assert.Greater(t, assertUint(t, m2, "uptime_ms"), assertUint(t, m1, "uptime_ms"))
	})
}

func TestConformance_Debug(t *testing.T) {
	t.Parallel()
	// At every log level: an operator who turns frame logging on asked to
	// see frames, even under --log-level warn or error.
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
		t.Run(level.String(), func(t *testing.T) {
			t.Parallel()
			debugFrames(t, level)
		})
	}
}

func debugFrames(t *testing.T, level slog.Level) {
	var logs syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: level}))
	addr := startServer(t, maincontrol.Config{Logger: logger})
	cl := clientPeer(t, addr)
	for _, on := range []string{"true", "false"} {
		m := cl.request("debug", "req", "d-"+on, "on", on)
		assertKeys(t, m, "type", "req")
		assert.Equal(t, "debug_ok", m.Type())
		assert.Equal(t, "d-"+on, m.Value("req"))
	}
	cl.alive("while-off")
	assert.NotContains(t, logs.String(), "while-off", "frames are not logged while off")

	cl.request("debug", "req", "d", "on", "true")
	cl.submit("while-on", "task_type", "t")
	cl.alive("x")
	out := logs.String()
	assert.Contains(t, out, "req=while-on", "the submit is logged")
	assert.Contains(t, out, "type=submitted", "the reply is logged")

	// A big frame is logged cut short, with its size.
	cl.submit("big", "task_type", "t", "arg.big", strings.Repeat("z", 64<<10))
	cl.alive("y")
	out = logs.String()
	assert.Contains(t, out, "bytes=65")
	assert.Contains(t, out, "truncated=true")
	assert.NotContains(t, out, strings.Repeat("z", 5<<10), "a big payload is logged whole")
	cl.request("debug", "req", "d", "on", "false")
}

// Unknown keys MUST be ignored, in every message.
func TestConformance_UnknownKeysIgnored(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	x := []string{"zz.future", "1", "x-y_z", ""}
	cl := dialRaw(t, addr)
	assert.Equal(t, "hello_ok", cl.request("hello", append([]string{"req", "h"}, x...)...).Type())
	ex := dialRaw(t, addr)
	assert.Equal(t, "registered", ex.request("register", append([]string{"executor_id", "e1", "task_types", "t"}, x...)...).Type())
	with := func(kv ...string) []string { return append(kv, x...) }

	id := cl.submit("s", with("task_type", "t", "wait", "true")...)
	task := ex.expectTask(id)
	assert.False(t, task.Has("zz.future"), "unknown keys are not passed on")
	ex.send("started", with("task_id", u(id), "version", task.Value("version"))...)
	ex.send("progress", with("task_id", u(id), "version", task.Value("version"), "percent", "1")...)
	assert.Equal(t, "pong", ex.request("heartbeat", with("seq", "1", "running", u(id)+"."+task.Value("version"))...).Type())
	assert.Equal(t, "state", ex.request("state_get", with("req", "g")...).Type())
	ack := ex.request("result", with("task_id", u(id), "version", task.Value("version"), "status", "succeeded")...)
	assert.Equal(t, "true", ack.Value("accepted"))
	assert.Equal(t, "done", cl.expect("done").Type())
	for _, tc := range []struct {
		typ, reply string
		kv         []string
	}{
		{"query", "task_state", []string{"task_id", u(id)}},
		{"list", "tasks", []string{"state", "succeeded"}},
		{"stats", "stats", nil},
		{"state_get", "state", nil},
		{"debug", "debug_ok", []string{"on", "false"}},
		{"cancel", "cancelled", []string{"task_id", u(cl.submit("c", "task_type", "none"))}},
	} {
		m := cl.request(tc.typ, with(append([]string{"req", "r"}, tc.kv...)...)...)
		assert.Equal(t, tc.reply, m.Type(), "%s: %s", tc.typ, m)
	}
	assert.Equal(t, "bye_ack", ex.request("bye", x...).Type())
}

func TestConformance_Queueing(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)

	t.Run("a delayed task queues by the time its delay ends", func(t *testing.T) {
		delayed := cl.submit("a", "task_type", "q1", "delay_ms", "100")
		prompt := cl.submit("b", "task_type", "q1")
		time.Sleep(300 * time.Millisecond)
		ex := executorPeer(t, addr, "q1", "q1", 1)
		task := ex.expectTask(prompt)
		ex.start(task)
		ex.finish(task, "status", "succeeded")
		ex.expectTask(delayed)
	})
	t.Run("a dependency chain is released, then cancelled down the chain", func(t *testing.T) {
		a := cl.submit("a", "task_type", "q2")
		b := cl.submit("b", "task_type", "q2", "depends_on", u(a))
		c := cl.submit("c", "task_type", "q2", "depends_on", u(b)+","+u(a))
		d := cl.submit("d", "task_type", "none", "depends_on", u(c))
		ex := executorPeer(t, addr, "q2", "q2", 4)
		task := ex.expectTask(a)
		assert.Equal(t, "waiting", cl.stateOf(b))
		ex.start(task)
		ex.finish(task, "status", "succeeded")
		task = ex.expectTask(b)
		assert.Equal(t, "waiting", cl.stateOf(c))
		ex.start(task)
		ex.finish(task, "status", "failed", "retryable", "false")
		st := cl.query(c)
		assert.Equal(t, "cancelled", st.Value("state"))
		assert.Equal(t, "dependency "+u(b)+" failed", st.Value("error"))
		st = cl.query(d)
		assert.Equal(t, "cancelled", st.Value("state"))
		assert.Equal(t, "dependency "+u(c)+" cancelled", st.Value("error"))
	})
}

func TestConformance_Retention(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{Core: core.Config{RetentionMax: 2}})
	cl := clientPeer(t, addr)
	var ids []uint64
	for i := 0; i < 4; i++ {
		ids = append(ids, cl.submit("s", "task_type", "none", "key", "r"+strconv.Itoa(i)))
	}
	for _, i := range []int{2, 0, 1, 3} { // end order: the newest ended are 1 and 3
		cl.request("cancel", "req", "c", "task_id", u(ids[i]))
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		m := cl.request("list", "req", "l", "state", "cancelled")
		if m.Value("ids") == u(ids[1])+","+u(ids[3]) {
			break
		}
		require.True(t, time.Now().Before(deadline), "not dropped within 1 s: %s", m)
		time.Sleep(20 * time.Millisecond)
	}
	for _, i := range []int{0, 2} {
		cl.send("query", "req", "q", "task_id", u(ids[i]))
		cl.expectError(wire.CodeUnknownTask, "q")
	}
	m := cl.request("submit", "req", "again", "task_type", "none", "key", "r0")
	assert.False(t, m.Has("duplicate"), "a dropped task's key may be used again")
	assert.Equal(t, u(ids[3]+1), m.Value("task_id"))
	m = cl.request("submit", "req", "dup", "task_type", "none", "key", "r1")
	assert.Equal(t, "true", m.Value("duplicate"), "a kept task's key is still known")
}

// Spec section 4, task: the executor with the fewest dispatched and running
// tasks gets the next one; ties go to the one that registered first.
func TestConformance_DispatchChoice(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)
	e1 := executorPeer(t, addr, "e1", "t", 4)
	e2 := executorPeer(t, addr, "e2", "t,u", 4)
	e3 := executorPeer(t, addr, "e3", "u", 4)
	for i, want := range []*rawPeer{e1, e2, e1, e2, e1} {
		id := cl.submit("s"+strconv.Itoa(i), "task_type", "t")
		want.expectTask(id)
	}
	// e2 has 2 tasks, e3 none: u goes to e3, then e3 again (1 < 2), then
	// the tie at 2 goes to e2, which registered first.
	for i, want := range []*rawPeer{e3, e3, e2} {
		id := cl.submit("u"+strconv.Itoa(i), "task_type", "u")
		want.expectTask(id)
	}
	e1.aliveExec(1)
	e3.aliveExec(1)
}

func TestConformance_DependencyNaming(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 1)
	pending := cl.submit("p", "task_type", "none")
	failed := cl.submit("f", "task_type", "t", "max_attempts", "1")
	task := ex.expectTask(failed)
	ex.start(task)
	ex.finish(task, "status", "failed")
	cancelled := cl.submit("c", "task_type", "none")
	cl.request("cancel", "req", "c", "task_id", u(cancelled))
	tests := []struct {
		deps, want string
	}{
		{u(pending) + "," + u(cancelled) + "," + u(failed), "dependency " + u(cancelled) + " cancelled"},
		{u(failed) + "," + u(cancelled), "dependency " + u(failed) + " failed"},
		{u(pending) + "," + u(pending) + "," + u(failed), "dependency " + u(failed) + " failed"},
	}
	for _, tc := range tests {
		m := cl.request("submit", "req", "d", "task_type", "none", "depends_on", tc.deps, "wait", "true")
		require.Equal(t, "submitted", m.Type(), "got %s", m)
		d := cl.expect("done")
		assert.Equal(t, "cancelled", d.Value("state"))
		assert.Equal(t, tc.want, d.Value("error"))
	}
}

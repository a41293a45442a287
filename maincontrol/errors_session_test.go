package maincontrol_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/wire"
)

func TestErrors_NotRegistered(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	for _, typ := range []string{"submit", "query", "cancel", "list", "stats", "state_get", "debug",
		"heartbeat", "started", "progress", "result", "bye", "welcome", "task", "error", "pong",
		"registered", "hello_ok", "frobnicate"} {
		t.Run(typ, func(t *testing.T) {
			p := dialRaw(t, addr)
			p.send(typ, "req", "nr-"+typ, "task_type", "t", "task_id", "1")
			p.expectErrorClose(wire.CodeNotRegistered, "nr-"+typ)
		})
	}
	t.Run("without req", func(t *testing.T) {
		p := dialRaw(t, addr)
		p.send("stats")
		p.expectErrorClose(wire.CodeNotRegistered, "")
	})
	t.Run("req over 64 bytes is not echoed", func(t *testing.T) {
		p := dialRaw(t, addr)
		p.send("stats", "req", strings.Repeat("r", 65))
		p.expectErrorClose(wire.CodeNotRegistered, "")
	})
	t.Run("after a refused hello", func(t *testing.T) {
		p := dialRaw(t, addr)
		p.send("register", "executor_id", "x", "task_types", "t", "slots", "0")
		p.expectError(wire.CodeBadRequest, "")
		p.send("heartbeat", "seq", "1")
		p.expectErrorClose(wire.CodeNotRegistered, "")
	})
}

func TestErrors_UnsupportedProto(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	for _, proto := range []string{"2", "0", "", "01", "one"} {
		t.Run("hello proto="+proto, func(t *testing.T) {
			p := dialRaw(t, addr)
			p.send("hello", "req", "h", "proto", proto)
			p.expectErrorClose(wire.CodeUnsupportedProto, "h")
		})
		t.Run("register proto="+proto, func(t *testing.T) {
			p := dialRaw(t, addr)
			p.send("register", "proto", proto, "executor_id", "e1", "task_types", "t")
			p.expectErrorClose(wire.CodeUnsupportedProto, "")
		})
	}
	t.Run("req over 64 bytes is not echoed", func(t *testing.T) {
		p := dialRaw(t, addr)
		p.send("hello", "req", strings.Repeat("r", 65), "proto", "2")
		p.expectErrorClose(wire.CodeUnsupportedProto, "")
	})
	t.Run("proto is checked before values", func(t *testing.T) {
		p := dialRaw(t, addr)
		p.send("register", "proto", "2", "executor_id", "e1", "task_types", "t", "slots", "0")
		p.expectErrorClose(wire.CodeUnsupportedProto, "")
	})
}

func TestErrors_NotPermitted(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	t.Run("executor", func(t *testing.T) {
		ex := executorPeer(t, addr, "e1", "t", 1)
		for i, typ := range []string{"submit", "query", "cancel", "list", "stats", "debug", "hello", "register",
			"task", "welcome", "registered", "pong", "result_ack", "cancelled", "done", "error", "bye_ack"} {
			ex.send(typ, "task_type", "t", "task_id", "1", "executor_id", "e1", "task_types", "t")
			m := ex.expectError(wire.CodeNotPermitted, "")
			assert.Contains(t, m.Value("message"), typ)
			ex.aliveExec(i + 1)
		}
		assert.Equal(t, "0", clientPeer(t, addr).request("stats", "req", "s").Value("tasks.pending"),
			"an executor's submit created nothing")
	})
	t.Run("client", func(t *testing.T) {
		cl := clientPeer(t, addr)
		for _, typ := range []string{"heartbeat", "result", "bye", "started", "progress", "hello", "register",
			"task", "welcome", "registered", "pong", "result_ack", "submitted", "done", "task_state",
			"tasks", "state", "debug_ok", "hello_ok", "bye_ack", "error"} {
			cl.send(typ, "req", "np-"+typ, "seq", "1", "task_id", "1", "version", "1", "status", "succeeded",
				"executor_id", "x", "task_types", "t")
			cl.expectError(wire.CodeNotPermitted, "np-"+typ)
			cl.alive("after-" + typ)
		}
	})
}

func TestErrors_DuplicateExecutor(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)
	first := executorPeer(t, addr, "e1", "t", 1)
	for i := 0; i < 3; i++ {
		dup := dialRaw(t, addr)
		dup.send("register", "executor_id", "e1", "task_types", "t,u", "slots", "9")
		dup.expectErrorClose(wire.CodeDuplicateExecutor, "")
	}
	first.aliveExec(1)
	id := cl.submit("s", "task_type", "t")
	task := first.expectTask(id)
	first.start(task)
	assert.Equal(t, "true", first.finish(task, "status", "succeeded").Value("accepted"))
	m := cl.request("stats", "req", "s")
	assert.Equal(t, "1", m.Value("executors"))
	// Another id is fine; after the first leaves its id is free again.
	executorPeer(t, addr, "e2", "t", 1)
	first.send("bye")
	first.expect("bye_ack")
	first.expectClosed()
	executorPeer(t, addr, "e1", "t", 1).aliveExec(1)
}

func TestErrors_UnknownTask(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)
	for _, typ := range []string{"query", "cancel"} {
		for _, id := range []string{"0", "1", "18446744073709551615"} {
			cl.send(typ, "req", typ+id, "task_id", id)
			cl.expectError(wire.CodeUnknownTask, typ+id)
			cl.alive("a")
		}
	}
}

func TestErrors_IllegalTransition(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 1)
	succeeded := cl.submit("a", "task_type", "t")
	task := ex.expectTask(succeeded)
	ex.start(task)
	ex.finish(task, "status", "succeeded", "out.x", "1")
	failed := cl.submit("b", "task_type", "t", "max_attempts", "1")
	task = ex.expectTask(failed)
	ex.start(task)
	ex.finish(task, "status", "failed", "error", "e")
	cancelled := cl.submit("c", "task_type", "none")
	cl.request("cancel", "req", "c", "task_id", u(cancelled))
	for _, tc := range []struct {
		state string
		id    uint64
	}{{"succeeded", succeeded}, {"failed", failed}, {"cancelled", cancelled}} {
		t.Run(tc.state, func(t *testing.T) {
			before := cl.query(tc.id)
			require.Equal(t, tc.state, before.Value("state"))
			cl.send("cancel", "req", "x", "task_id", u(tc.id))
			cl.expectError(wire.CodeIllegalTransition, "x")
			after := cl.query(tc.id)
			assert.Equal(t, before.Fields, after.Fields, "task unchanged")
		})
	}
}

func TestErrors_QueueFull(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{Core: core.Config{MaxPending: 5}})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 1)
	var ids []uint64
	for i := 0; i < 4; i++ {
		ids = append(ids, cl.submit("s", "task_type", "none", "key", "k"+strconv.Itoa(i)))
	}
	// The fifth is dispatched and running: it counts too.
	ids = append(ids, cl.submit("s", "task_type", "t"))
	task := ex.expectTask(ids[4])
	ex.start(task)
	for i := 0; i < 3; i++ { // would be waiting
		cl.send("submit", "req", "full"+strconv.Itoa(i), "task_type", "none", "depends_on", u(ids[0]))
		cl.expectError(wire.CodeQueueFull, "full"+strconv.Itoa(i))
	}
	t.Run("a duplicate key is never queue_full", func(t *testing.T) {
		m := cl.request("submit", "req", "dup", "task_type", "none", "key", "k2", "wait", "true")
		assert.Equal(t, "submitted", m.Type(), "got %s", m)
		assert.Equal(t, "true", m.Value("duplicate"))
		assert.Equal(t, u(ids[2]), m.Value("task_id"))
	})
	t.Run("a new key is", func(t *testing.T) {
		cl.send("submit", "req", "nk", "task_type", "none", "key", "new")
		cl.expectError(wire.CodeQueueFull, "nk")
	})
	t.Run("room again once a task ends", func(t *testing.T) {
		ex.finish(task, "status", "succeeded")
		cl.submit("ok", "task_type", "none", "key", "new")
		cl.send("submit", "req", "full", "task_type", "none")
		cl.expectError(wire.CodeQueueFull, "full")
		cl.send("cancel", "req", "c", "task_id", u(ids[2]))
		// The duplicate waiter's done for k2 and the cancelled, by req.
		got := map[string]string{}
		for i := 0; i < 2; i++ {
			m := cl.recv()
			got[m.Value("req")] = m.Type()
		}
		assert.Equal(t, map[string]string{"dup": "done", "c": "cancelled"}, got)
		cl.submit("ok2", "task_type", "none")
	})
	m := cl.request("stats", "req", "s")
	assert.Equal(t, "5", m.Value("tasks.pending"))
}

package core

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apollo11/apollo11/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCore_IdempotencyKeys(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPending = 1; c.Retention = time.Minute })
	cl := h.client()
	id := h.submit(cl, "task_type", "x", "key", "k1")
	h.send(cl, "submit", "req", "dup", "task_type", "y", "key", "k1", "priority", "3")
	m := h.expect(cl, "submitted")
	assert.Equal(t, "dup", m.Value("req"))
	assert.Equal(t, itoa(id), m.Value("task_id"))
	assert.Equal(t, "true", m.Value("duplicate"))
	assert.Equal(t, 1, h.c.tasks.count, "a duplicate creates nothing")
	assert.Equal(t, uint64(2), h.c.nextID)

	// The queue is full (MaxPending=1), but a duplicate is never queue_full.
	h.send(cl, "submit", "req", "new", "task_type", "x", "key", "k2")
	h.expectErr(cl, wire.CodeQueueFull)
	h.send(cl, "submit", "req", "dup2", "task_type", "x", "key", "k1", "wait", "true")
	m = h.expect(cl, "submitted")
	assert.Equal(t, "true", m.Value("duplicate"))
	h.none(cl)

	// wait=true on a duplicate: done when the task ends, with its own req.
	cl2 := h.client()
	h.send(cl2, "submit", "req", "w2", "task_type", "x", "key", "k1", "wait", "true")
	h.expect(cl2, "submitted")
	ex := h.executor("e1", "x", 1)
	h.task(ex)
	h.start(ex, id, 1)
	h.accepted(ex, id, 1, "succeeded", "out.r", "42")
	d := h.expect(cl, "done")
	assert.Equal(t, "dup2", d.Value("req"))
	assert.Equal(t, "succeeded", d.Value("state"))
	assert.Equal(t, "42", d.Value("out.r"))
	d = h.expect(cl2, "done")
	assert.Equal(t, "w2", d.Value("req"))

	// Already ended: done at once, after submitted.
	h.send(cl, "submit", "req", "late", "task_type", "x", "key", "k1", "wait", "true")
	assert.Equal(t, []string{"submitted", "done"}, h.types(cl))
	h.expect(cl, "submitted")
	d = h.expect(cl, "done")
	assert.Equal(t, "late", d.Value("req"))
	assert.Equal(t, itoa(id), d.Value("task_id"))
	// Without wait: no done.
	h.send(cl, "submit", "req", "late2", "task_type", "x", "key", "k1")
	h.expect(cl, "submitted")
	h.none(cl)
	h.checkReplay()

	// After retention drops the task, the key makes a new task.
	h.advance(time.Minute)
	require.Nil(t, h.c.tasks.get(id))
	h.send(cl, "query", "req", "q", "task_id", itoa(id))
	h.expectErr(cl, wire.CodeUnknownTask)
	h.send(cl, "submit", "req", "again", "task_type", "x", "key", "k1")
	m = h.expect(cl, "submitted")
	assert.False(t, m.Has("duplicate"))
	assert.Equal(t, "2", m.Value("task_id"))
	h.checkReplay()

	// An empty key is a bad request; keys are kept across a restart.
	h.send(cl, "submit", "req", "r", "task_type", "x", "key", "")
	h.expectErr(cl, wire.CodeBadRequest)
	h.restart()
	cl = h.client()
	h.send(cl, "submit", "req", "r", "task_type", "x", "key", "k1")
	m = h.expect(cl, "submitted")
	assert.Equal(t, "2", m.Value("task_id"))
	assert.Equal(t, "true", m.Value("duplicate"))
}

func TestCore_Backpressure(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPending = 3 })
	cl := h.client()
	a := h.submit(cl, "task_type", "x")
	h.submit(cl, "task_type", "x", "depends_on", itoa(a)) // waiting counts too
	h.submit(cl, "task_type", "x", "delay_ms", "100000")
	h.send(cl, "submit", "req", "full", "task_type", "x")
	e := h.expectErr(cl, wire.CodeQueueFull)
	assert.Equal(t, "full", e.Value("req"))
	assert.False(t, h.fx.closed[cl], "the connection stays")
	assert.Equal(t, 3, h.c.tasks.count, "nothing dropped or created")
	// Running tasks count too.
	ex := h.executor("e1", "x", 1)
	h.task(ex)
	h.start(ex, a, 1)
	h.send(cl, "submit", "req", "full", "task_type", "x")
	h.expectErr(cl, wire.CodeQueueFull)
	h.accepted(ex, a, 1, "succeeded")
	// Task 2 is released and dispatched; room for one more.
	h.submit(cl, "task_type", "x")
	h.send(cl, "submit", "req", "full", "task_type", "x")
	h.expectErr(cl, wire.CodeQueueFull)
	h.checkReplay()
}

func TestCore_SubmitValues(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxFrame = 2048 })
	h.fx.dec.MaxFrame = 2048
	cl := h.client()
	for _, kv := range [][]string{
		{},
		{"task_type", ""},
		{"task_type", "x", "max_attempts", "x"},
		{"task_type", "x", "timeout_ms", "-5"},
		{"task_type", "x", "delay_ms", "1.5"},
		{"task_type", "x", "wait", "yes"},
		{"task_type", "x", "depends_on", "1"},
		{"task_type", "x", "arg.big", strings.Repeat("v", 2048)},
		{"task_type", "x", "trace_id", strings.Repeat("t", 2048)},
	} {
		h.send(cl, "submit", append([]string{"req", "bad"}, kv...)...)
		e := h.expectErr(cl, wire.CodeBadRequest)
		assert.Equal(t, "bad", e.Value("req"), "%v", kv)
		assert.NotEmpty(t, e.Value("message"))
	}
	assert.Zero(t, h.c.tasks.count)
	// Arguments, type and trace reach the executor as sent.
	ex := h.executor("e1", "x", 1)
	id := h.submit(cl, "task_type", "x", "arg.a", "1", "arg.b", "x=y\nz\\", "trace_id", "tr-1", "timeout_ms", "7")
	m := h.expect(ex, "task")
	assert.Equal(t, itoa(id), m.Value("task_id"))
	assert.Equal(t, "x", m.Value("task_type"))
	assert.Equal(t, "1", m.Value("arg.a"))
	assert.Equal(t, "x=y\nz\\", m.Value("arg.b"))
	assert.Equal(t, "tr-1", m.Value("trace_id"))
	assert.Equal(t, "7", m.Value("timeout_ms"))
	assert.Equal(t, "3", m.Value("max_attempts"), "default max_attempts")
	assert.Equal(t, "0", m.Value("state_version"))
	st := h.query(cl, id)
	assert.Equal(t, "tr-1", st.Value("trace_id"))
	assert.Equal(t, "dispatched", st.Value("state"))
	assert.Equal(t, "e1", st.Value("executor_id"))
	assert.Equal(t, fmt.Sprint(h.clock.T.UnixMilli()), st.Value("created_ms"))
	h.checkReplay()
}

// A task type that cannot be a list item is accepted (the spec limits no
// value of task_type) but can never be registered, so it stays pending:
// docs/protocol.md, "A task_type with a comma or a space".
func TestCore_UnregistrableTaskType(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	comma := h.submit(cl, "task_type", "a,b")
	space := h.submit(cl, "task_type", "a b")
	ex := h.executor("e1", "a,b", 4) // registers a and b, not "a,b"
	bad := h.open()
	h.send(bad, "register", "executor_id", "e2", "task_types", "a b", "slots", "1")
	h.expectErr(bad, wire.CodeBadRequest)
	h.advance(time.Minute)
	h.none(ex)
	assert.Equal(t, Pending, h.state(comma))
	assert.Equal(t, Pending, h.state(space))
	h.send(cl, "cancel", "req", "c", "task_id", itoa(comma))
	h.expect(cl, "cancelled")
	assert.Equal(t, Cancelled, h.state(comma))
	h.checkReplay()
}

// Id 0 names no task, though it falls in the first chunk of the table
// (whose empty slots have id 0).
func TestCore_TaskIDZero(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	id := h.submit(cl, "task_type", "x")
	h.task(ex)
	h.start(ex, id, 1)
	before := dump(h.c)
	h.send(cl, "query", "req", "q", "task_id", "0")
	h.expectErr(cl, wire.CodeUnknownTask)
	h.send(cl, "cancel", "req", "q", "task_id", "0")
	h.expectErr(cl, wire.CodeUnknownTask)
	h.send(cl, "submit", "req", "q", "task_type", "x", "depends_on", "0")
	h.expectErr(cl, wire.CodeBadRequest)
	h.send(ex, "started", "task_id", "0", "version", "0")
	h.refused(ex, 0, 0, wire.ReasonUnknownTask, "succeeded")
	h.send(ex, "heartbeat", "seq", "1", "running", "1.1,0.0")
	h.expect(ex, "pong")
	m := h.expect(ex, "cancel")
	assert.Equal(t, "0", m.Value("task_id"))
	assert.Nil(t, h.c.tasks.get(0))
	assert.Nil(t, h.c.tasks.mut(0))
	assert.Equal(t, before, dump(h.c))
}

// Unknown keys are ignored (spec section 2), in every message.
func TestCore_UnknownKeysIgnored(t *testing.T) {
	h := newHarness(t)
	p := h.open()
	h.send(p, "hello", "req", "h", "future", "1", "client", "me")
	h.expect(p, "hello_ok")
	q := h.open()
	h.send(q, "register", "executor_id", "e1", "task_types", "x", "future", "1")
	h.expect(q, "registered")
	id := h.submit(p, "task_type", "x", "future.key", "v", "x", "y")
	m := h.expect(q, "task")
	assert.False(t, m.Has("future.key"), "only arg.* reach the executor")
	h.send(q, "started", "task_id", itoa(id), "version", "1", "future", "1")
	h.accepted(q, id, 1, "succeeded", "future", "1", "state.other.x", "1")
	assert.Empty(t, h.c.state, "state.* other than set and add is ignored")
	assert.Zero(t, h.c.stateVer)
}

// An executor may register an empty list of task types: it gets no tasks.
func TestCore_EmptyTaskTypes(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "", 4)
	h.submit(cl, "task_type", "x")
	h.none(ex)
	assert.Empty(t, h.c.execs["e1"].types)
	h.heartbeat(ex, "")
}

// A task frame carries nine keys besides the args, and a payload holds
// at most 1,024 keys (spec section 2): a submit with more args than the
// rest is refused, not accepted and then never dispatched.
func TestCore_SubmitArgsFitTheTaskFrame(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxFrame = 1 << 20 })
	ex := h.executor("e1", "t", 1)
	cl := h.client()
	args := func(n int) []string {
		kv := []string{"req", "r", "task_type", "t"}
		for i := range n {
			kv = append(kv, fmt.Sprintf("arg.a%d", i), "v")
		}
		return kv
	}
	h.send(cl, "submit", args(wire.MaxKeys-taskFrameKeys+1)...)
	e := h.expect(cl, "error")
	assert.Equal(t, "bad_request", e.Value("code"))
	assert.Contains(t, e.Value("message"), "at most 1015 arg.* keys")

	h.send(cl, "submit", args(wire.MaxKeys-taskFrameKeys)...)
	h.expect(cl, "submitted")
	task := h.expect(ex, "task")
	assert.Len(t, task.Fields, wire.MaxKeys, "the largest task frame")
}

// A keyed submit sent again is answered with its task even when one of its
// dependencies has been forgotten since: the key is looked up before the
// dependencies are (a client that retries a pipeline must not get
// bad_request for a task that exists).
func TestCore_KeyBeforeForgottenDependency(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RetentionMax = 1 })
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	dep := h.submit(cl, "task_type", "x")
	id := h.submit(cl, "task_type", "y", "key", "k", "depends_on", itoa(dep))
	_, ver := h.task(ex)
	h.start(ex, dep, ver)
	h.accepted(ex, dep, ver, "succeeded")
	other := h.submit(cl, "task_type", "x") // its end pushes dep out (RetentionMax 1)
	_, ver = h.task(ex)
	h.start(ex, other, ver)
	h.accepted(ex, other, ver, "succeeded")
	h.advance(time.Second) // retention runs on ticks
	require.Nil(t, h.c.tasks.get(dep), "dep forgotten")
	require.Equal(t, Pending, h.state(id))

	h.send(cl, "submit", "req", "again", "task_type", "y", "key", "k", "depends_on", itoa(dep))
	m := h.expect(cl, "submitted")
	assert.Equal(t, itoa(id), m.Value("task_id"))
	assert.Equal(t, "true", m.Value("duplicate"))
	// Without the key the unknown dependency is still refused.
	h.send(cl, "submit", "req", "nokey", "task_type", "y", "depends_on", itoa(dep))
	h.expectErr(cl, wire.CodeBadRequest)
}

package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCore_BasicFlow(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "echo", 1)
	id := h.submit(cl, "task_type", "echo", "arg.msg", "hi=there", "wait", "true")
	assert.Equal(t, uint64(1), id)
	task := h.expect(ex, "task")
	assert.Equal(t, "1", task.Value("task_id"))
	assert.Equal(t, "1", task.Value("version"))
	assert.Equal(t, "1", task.Value("attempt"))
	assert.Equal(t, "hi=there", task.Value("arg.msg"))
	assert.Len(t, task.Value("trace_id"), 32)
	h.send(ex, "started", "task_id", "1", "version", "1")
	h.none(ex)
	assert.Equal(t, Running, h.state(1))
	h.send(ex, "result", "task_id", "1", "version", "1", "status", "succeeded", "out.msg", "hi=there", "state.add.n", "5")
	ack := h.expect(ex, "result_ack")
	assert.Equal(t, "true", ack.Value("accepted"))
	done := h.expect(cl, "done")
	assert.Equal(t, "s", done.Value("req"))
	assert.Equal(t, "succeeded", done.Value("state"))
	assert.Equal(t, "hi=there", done.Value("out.msg"))
	assert.Equal(t, "5", h.c.state["n"])
	assert.Equal(t, uint64(1), h.c.stateVer)

	h.send(cl, "query", "req", "q", "task_id", "1")
	st := h.expect(cl, "task_state")
	assert.Equal(t, "succeeded", st.Value("state"))
	assert.Equal(t, "e1", st.Value("executor_id"))
	assert.Equal(t, "hi=there", st.Value("out.msg"))

	require.Equal(t, dump(h.c), dump(h.replayed()))
}

func TestCore_RetryBackoffAndAttempts(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	h.submit(cl, "task_type", "x", "max_attempts", "2")
	h.expect(ex, "task")
	h.send(ex, "started", "task_id", "1", "version", "1")
	h.send(ex, "result", "task_id", "1", "version", "1", "status", "failed", "error", "boom", "out.partial", "1")
	h.expect(ex, "result_ack")
	require.Equal(t, Retrying, h.state(1))
	h.send(cl, "query", "req", "q", "task_id", "1")
	st := h.expect(cl, "task_state")
	assert.Equal(t, "boom", st.Value("error"))
	assert.Equal(t, "1", st.Value("out.partial"))
	h.advance(400 * time.Millisecond)
	assert.Equal(t, Retrying, h.state(1), "backoff is at least 500ms")
	h.advance(700 * time.Millisecond)
	task := h.expect(ex, "task")
	assert.Equal(t, "2", task.Value("version"))
	assert.Equal(t, "2", task.Value("attempt"))
	h.send(ex, "started", "task_id", "1", "version", "2")
	// A late result of version 1 is stale.
	h.send(ex, "result", "task_id", "1", "version", "1", "status", "succeeded")
	assert.Equal(t, "stale", h.expect(ex, "result_ack").Value("reason"))
	h.send(ex, "result", "task_id", "1", "version", "2", "status", "failed")
	h.expect(ex, "result_ack")
	assert.Equal(t, Failed, h.state(1), "attempts used up")
	require.Equal(t, dump(h.c), dump(h.replayed()))
}

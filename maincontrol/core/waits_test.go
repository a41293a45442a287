package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// TestCore_FrameWaits pins what each frame the core sends waits for
// (Effects.Send): submitted, cancelled, done and result_ack confirm a
// change, which the server holds while the log cannot be written;
// welcome and hello_ok show none and are never held for the disk; task
// frames go through SendTask (gates_test.go); every other frame waits for
// the records before it.
func TestCore_FrameWaits(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	a := h.submit(cl, "task_type", "x", "key", "k", "wait", "true")
	h.send(cl, "submit", "req", "dup", "task_type", "x", "key", "k")
	h.expect(cl, "submitted")
	id, v := h.task(ex)
	require.Equal(t, a, id)
	h.start(ex, id, v)
	h.accepted(ex, id, v, "succeeded")
	h.refused(ex, id, v, wire.ReasonIllegalTransition, "succeeded")
	h.expect(cl, "done")
	b := h.submit(cl, "task_type", "none")
	h.send(cl, "cancel", "req", "c", "task_id", itoa(b))
	h.expect(cl, "cancelled")
	h.query(cl, a)
	h.send(cl, "stats", "req", "s")
	h.send(cl, "submit", "req", "bad")
	h.send(ex, "heartbeat", "seq", "1")

	want := map[string]Wait{
		"submitted": WaitConfirm, "cancelled": WaitConfirm, "done": WaitConfirm, "result_ack": WaitConfirm,
		"welcome": WaitNothing, "hello_ok": WaitNothing,
	}
	assert.Len(t, h.fx.gates, 1, "the task frame went through SendTask")
	assert.Zero(t, h.fx.waits["task"], "no task frame went through Send")
	for typ, w := range want {
		assert.NotZero(t, h.fx.waits[typ][w], "%s sent with wait %d", typ, w)
	}
	for typ, n := range h.fx.waits {
		for w, count := range n {
			if Wait(w) != want[typ] { // WaitDurable when not in want
				assert.Zero(t, count, "%s sent with wait %d", typ, w)
			}
		}
	}
	for _, typ := range []string{"registered", "task_state", "stats", "error"} {
		assert.NotZero(t, h.fx.waits[typ][WaitDurable], "%s sent in this test", typ)
	}
}

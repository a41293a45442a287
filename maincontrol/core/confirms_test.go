package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// TestCore_ConfirmingFrames pins which frames the core marks as confirming
// a change (Effects.Send): exactly submitted, cancelled, done, result_ack
// and task. The server holds those, and only those, while the log cannot
// be written.
func TestCore_ConfirmingFrames(t *testing.T) {
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

	confirming := map[string]bool{"submitted": true, "cancelled": true, "done": true, "result_ack": true, "task": true}
	for typ := range confirming {
		assert.NotZero(t, h.fx.confirming[typ][1], "%s sent, marked confirming", typ)
	}
	for typ, n := range h.fx.confirming {
		if confirming[typ] {
			assert.Zero(t, n[0], "%s sent without the confirming mark", typ)
		} else {
			assert.Zero(t, n[1], "%s marked confirming", typ)
		}
	}
	for _, typ := range []string{"welcome", "hello_ok", "registered", "task_state", "stats", "error"} {
		assert.NotZero(t, h.fx.confirming[typ][0], "%s sent in this test", typ)
	}
}

package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCore_Unlogged: without a log the core makes the same decisions and
// reaches the same state, and hands no records to Effects.
func TestCore_Unlogged(t *testing.T) {
	run := func(mods ...func(*Config)) *harness {
		h := newHarness(t, mods...)
		cl := h.client()
		ex := h.executor("e1", "x", 2)
		a := h.submit(cl, "task_type", "x", "arg.n", "1", "wait", "true")
		b := h.submit(cl, "task_type", "x", "max_attempts", "2", "key", "k")
		c := h.submit(cl, "task_type", "x", "delay_ms", "1000")
		d := h.submit(cl, "task_type", "x", "depends_on", itoa(a))
		type token struct {
			id uint64
			v  uint64
		}
		var got []token
		for range 2 {
			id, v := h.task(ex)
			got = append(got, token{id, v})
		}
		for _, tk := range got {
			id, v := tk.id, tk.v
			h.start(ex, id, v)
			switch id {
			case a:
				h.send(ex, "result", "task_id", itoa(id), "version", itoa(v), "status", "succeeded", "out.n", "2", "state.add.sum", "5")
			case b:
				h.send(ex, "result", "task_id", itoa(id), "version", itoa(v), "status", "failed", "error", "boom")
			}
		}
		h.drain(ex)
		h.expect(cl, "done") // a's, for wait=true
		h.send(cl, "cancel", "req", "c", "task_id", itoa(c))
		h.expect(cl, "cancelled")
		h.advance(2 * time.Second)
		h.c.Tick()
		for _, id := range []uint64{b, d} {
			require.NotEqual(t, Pending, h.state(id), "task %d dispatched again", id)
		}
		return h
	}
	logged := run()
	unlogged := run(func(c *Config) { c.Unlogged = true })
	assert.NotEmpty(t, logged.fx.records)
	assert.Empty(t, unlogged.fx.records)
	assert.Equal(t, dump(logged.c), dump(unlogged.c))
}

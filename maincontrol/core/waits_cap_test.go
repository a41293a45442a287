package core

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The waiters of a connection that closes are dropped: a task that never
// ends does not keep them. A connection's waits are capped at
// --max-pending, however often it waits for the same task.
func TestCore_WaitersOfClosedPeerDropped(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPending = 5 })
	owner := h.client()
	id := h.submit(owner, "task_type", "nobody", "key", "K")
	cl := h.client()
	for i := range 5 {
		h.send(cl, "submit", "req", "w"+strconv.Itoa(i), "task_type", "nobody", "key", "K", "wait", "true")
		assert.Equal(t, "true", h.expect(cl, "submitted").Value("duplicate"))
	}
	h.send(cl, "submit", "req", "over", "task_type", "nobody", "key", "K", "wait", "true")
	e := h.expect(cl, "error")
	assert.Equal(t, "bad_request", e.Value("code"))
	assert.Equal(t, "wait=true: this connection already waits for 5 done replies, its limit; wait for some to come first, or submit without wait",
		e.Value("message"), "the text kept escaped decodes as it was")
	pw := h.c.peers[cl].waits
	assert.Equal(t, 5, pw.n)
	h.c.Closed(cl)
	assert.Zero(t, pw.n)
	assert.Empty(t, h.c.waiters.byTask)
	assert.Empty(t, h.c.waiters.byKey)
	assert.Zero(t, h.c.waiters.total)

	h.send(owner, "submit", "req", "again", "task_type", "nobody", "key", "K", "wait", "true")
	h.expect(owner, "submitted")
	h.send(owner, "cancel", "req", "c", "task_id", strconv.FormatUint(id, 10))
	assert.Equal(t, "cancelled", h.expect(owner, "done").Value("state"), "other peers still told")
	h.expect(owner, "cancelled")
}

// A connection's waits are capped at 65,536, or --max-pending when lower,
// however often it waits for the same task (docs/protocol.md appendix,
// "Waits"); a refused wait changes nothing. Each wait still gets its own
// done, with its own req.
func TestCore_WaitsPerConnectionCapped(t *testing.T) {
	for _, tc := range []struct {
		maxPending int // 0: the default, a million
		want       int
	}{
		{maxPending: 0, want: 65_536},
		{maxPending: 5, want: 5},
		{maxPending: 65_537, want: 65_536},
	} {
		t.Run("max_pending="+strconv.Itoa(tc.maxPending), func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.MaxPending = tc.maxPending; c.Unlogged = true })
			owner := h.client()
			id := h.submit(owner, "task_type", "nobody", "key", "K")
			cl := h.client()
			for i := range tc.want {
				h.c.Handle(cl, msg("submit", "req", "w"+strconv.Itoa(i), "task_type", "nobody", "key", "K", "wait", "true"))
				if i%4096 == 0 {
					h.fx.frames[cl] = nil // the replies are the harness's memory
				}
			}
			h.fx.frames[cl] = nil
			require.Equal(t, tc.want, h.c.peers[cl].waits.n)
			h.send(cl, "submit", "req", "over", "task_type", "nobody", "key", "K", "wait", "true")
			e := h.expect(cl, "error")
			assert.Equal(t, "bad_request", e.Value("code"))
			assert.Equal(t, "over", e.Value("req"))
			assert.Contains(t, e.Value("message"), "already waits for "+strconv.Itoa(tc.want)+" done replies")
			assert.Equal(t, tc.want, h.c.peers[cl].waits.n, "a refused wait changes nothing")

			// Another connection has its own count, and every wait is
			// answered when the task ends, over the next ticks.
			h.send(owner, "submit", "req", "again", "task_type", "nobody", "key", "K", "wait", "true")
			h.expect(owner, "submitted")
			h.send(owner, "cancel", "req", "c", "task_id", strconv.FormatUint(id, 10))
			for range 100 {
				if len(h.fx.frames[cl]) == tc.want {
					break
				}
				h.c.Tick()
			}
			require.Len(t, h.fx.frames[cl], tc.want)
			for i, m := range h.fx.frames[cl] {
				require.Equal(t, "done", m.Type())
				require.Equal(t, "w"+strconv.Itoa(i), m.Value("req"), "each wait its own req, in order")
			}
			assert.Zero(t, h.c.waiters.total)
		})
	}
}

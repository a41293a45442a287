package core

import (
	"strings"
	"testing"
	"time"

	"github.com/apollo11/apollo11/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listIDs sends a list request and returns the reply.
func (h *harness) list(p PeerID, kv ...string) *wire.Message {
	h.t.Helper()
	h.send(p, "list", append([]string{"req", "l"}, kv...)...)
	m := h.expect(p, "tasks")
	require.Equal(h.t, "l", m.Value("req"))
	ids, err := m.List("ids")
	require.NoError(h.t, err)
	require.Equal(h.t, itoa(len(ids)), m.Value("count"))
	return m
}

func TestCore_List(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	for range 250 {
		h.submit(cl, "task_type", "x")
	}
	// A few in other states.
	for _, id := range []string{"3", "100", "101", "250"} {
		h.send(cl, "cancel", "req", "c", "task_id", id)
		h.expect(cl, "cancelled")
	}
	m := h.list(cl, "state", "cancelled")
	assert.Equal(t, "3,100,101,250", m.Value("ids"))
	assert.False(t, m.Has("next"))

	m = h.list(cl, "state", "pending")
	ids, _ := m.List("ids")
	assert.Len(t, ids, 100, "default limit 100")
	assert.Equal(t, "1", ids[0])
	assert.Equal(t, "2", ids[1])
	assert.Equal(t, "4", ids[2], "ascending, only the state asked for")
	assert.Equal(t, ids[99], m.Value("next"))
	assert.Equal(t, "103", m.Value("next"))

	m = h.list(cl, "state", "pending", "after", "103", "limit", "1000")
	ids, _ = m.List("ids")
	assert.Len(t, ids, 246-100)
	assert.Equal(t, "104", ids[0])
	assert.Equal(t, "249", ids[len(ids)-1])
	assert.False(t, m.Has("next"), "no next when nothing more follows")

	// Exactly limit matching ids left: no next.
	m = h.list(cl, "state", "pending", "after", "247", "limit", "2")
	assert.Equal(t, "248,249", m.Value("ids"))
	assert.False(t, m.Has("next"))
	m = h.list(cl, "state", "pending", "after", "246", "limit", "2")
	assert.Equal(t, "247,248", m.Value("ids"))
	assert.Equal(t, "248", m.Value("next"))
	m = h.list(cl, "state", "pending", "limit", "1")
	assert.Equal(t, "1", m.Value("ids"))
	assert.Equal(t, "1", m.Value("next"))

	// Empty results.
	for _, kv := range [][]string{{"state", "running"}, {"state", "pending", "after", "250"}, {"state", "pending", "after", "18446744073709551615"}} {
		m = h.list(cl, kv...)
		assert.Equal(t, "0", m.Value("count"))
		assert.Equal(t, "", m.Value("ids"))
		assert.False(t, m.Has("next"))
	}

	for _, kv := range [][]string{
		{"state", "pending", "limit", "0"},
		{"state", "pending", "limit", "1001"},
		{"state", "pending", "limit", "x"},
		{"state", "pending", "after", "-1"},
		{"state", "Pending"},
		{"state", "bogus"},
		{},
	} {
		h.send(cl, "list", append([]string{"req", "bad"}, kv...)...)
		e := h.expectErr(cl, wire.CodeBadRequest)
		assert.Equal(t, "bad", e.Value("req"), "%v", kv)
	}
	m = h.list(cl, "state", "pending", "limit", "1000")
	ids, _ = m.List("ids")
	assert.Len(t, ids, 246)
}

// With a tiny max frame, list returns fewer ids than the limit, with next,
// and paging with after reaches every id once.
func TestCore_ListTinyFrame(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxFrame = MinMaxFrame })
	h.fx.dec.MaxFrame = MinMaxFrame
	cl := h.client()
	for range 1000 {
		h.submit(cl, "task_type", "x")
	}
	var all []string
	after := "0"
	pages := 0
	for {
		m := h.list(cl, "state", "pending", "limit", "1000", "after", after)
		ids, _ := m.List("ids")
		all = append(all, ids...)
		pages++
		next, ok := m.Get("next")
		if !ok {
			break
		}
		assert.Less(t, len(ids), 1000)
		assert.Equal(t, ids[len(ids)-1], next)
		after = next
	}
	assert.Greater(t, pages, 1)
	require.Len(t, all, 1000)
	for i, id := range all {
		require.Equal(t, itoa(i+1), id)
	}
	// Every reply fitted (the recorder's decoder enforces MinMaxFrame); a
	// longest req still fits.
	h.send(cl, "list", "req", strings.Repeat("r", 64), "state", "pending", "limit", "1000")
	m := h.expect(cl, "tasks")
	assert.True(t, m.Has("next"))
}

func TestCore_Stats(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	h.send(cl, "stats", "req", "st")
	m := h.expect(cl, "stats")
	assert.Equal(t, "st", m.Value("req"))
	for _, s := range AllStates {
		assert.Equal(t, "0", m.Value("tasks."+s.String()), "zeros included: %s", s)
	}
	assert.Equal(t, "0", m.Value("executors"))
	assert.Equal(t, "0", m.Value("state_version"))
	assert.True(t, m.Has("uptime_ms"))

	// One task in each state.
	h.submit(cl, "task_type", "nobody")                    // 1 pending
	h.submit(cl, "task_type", "x", "depends_on", "1")      // 2 waiting
	ex := h.executor("e1", "x", 5)                         //
	h.submit(cl, "task_type", "x")                         // 3 running
	h.submit(cl, "task_type", "x")                         // 4 dispatched
	h.submit(cl, "task_type", "x")                         // 5 retrying
	h.submit(cl, "task_type", "x")                         // 6 succeeded
	h.submit(cl, "task_type", "x", "max_attempts", "1")    // 7 failed
	h.submit(cl, "task_type", "nobody", "delay_ms", "100") // 8 cancelled
	for range 5 {
		h.task(ex)
	}
	for _, id := range []uint64{3, 5, 6, 7} {
		h.start(ex, id, 1)
	}
	h.accepted(ex, 5, 1, "failed")
	h.accepted(ex, 6, 1, "succeeded", "state.set.a", "1")
	h.accepted(ex, 7, 1, "failed")
	h.send(cl, "cancel", "req", "c", "task_id", "8")
	h.expect(cl, "cancelled")
	h.advance(300 * time.Millisecond) // less than any first retry delay
	h.heartbeat(ex, "3.1,4.1")
	assert.Equal(t, Running, h.state(4), "listed: running")
	h.send(cl, "stats", "req", "st")
	m = h.expect(cl, "stats")
	want := map[State]string{Waiting: "1", Pending: "1", Dispatched: "0", Running: "2", Retrying: "1",
		Succeeded: "1", Failed: "1", Cancelled: "1"}
	for _, s := range AllStates {
		assert.Equal(t, want[s], m.Value("tasks."+s.String()), "%s", s)
	}
	assert.Equal(t, "1", m.Value("executors"))
	assert.Equal(t, "1", m.Value("state_version"))
	assert.Equal(t, "300", m.Value("uptime_ms"))
}

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

// Scenario tests for the task rules of spec sections 5 and 6, one rule per
// test, with a fake clock.

func TestCore_IDsNeverReused(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RetentionMax = 1; c.MaxPending = 3 })
	cl := h.client()
	for want := uint64(1); want <= 3; want++ {
		assert.Equal(t, want, h.submit(cl, "task_type", "x"))
	}
	// Refused submits make no id.
	h.send(cl, "submit", "req", "r", "task_type", "x")
	h.expectErr(cl, wire.CodeQueueFull)
	h.send(cl, "submit", "req", "r", "task_type", "x", "priority", "10")
	h.expectErr(cl, wire.CodeBadRequest)
	for id := 1; id <= 3; id++ {
		h.send(cl, "cancel", "req", "c", "task_id", fmt.Sprint(id))
		h.expect(cl, "cancelled")
	}
	h.advance(time.Millisecond) // retention keeps only the newest terminal task
	assert.Nil(t, h.c.tasks.get(1))
	assert.Nil(t, h.c.tasks.get(2))
	assert.NotNil(t, h.c.tasks.get(3))
	assert.Equal(t, uint64(4), h.submit(cl, "task_type", "x"))
	h.send(cl, "cancel", "req", "c", "task_id", "4")
	h.expect(cl, "cancelled")
	h.advance(time.Millisecond)
	require.Equal(t, 0, h.c.tasks.count-1, "only task 4 is left")

	// Across a restart too: the id counter is durable, even with every
	// task that had the highest ids dropped.
	h.restart()
	cl = h.client()
	assert.Equal(t, uint64(5), h.submit(cl, "task_type", "x"))
	entries := snapshotEntries(t, h.c)
	n := len(h.fx.records)
	h.send(cl, "cancel", "req", "c", "task_id", "5")
	h.expect(cl, "cancelled")
	h.advance(time.Millisecond)
	require.Nil(t, h.c.tasks.get(4))
	h.restartFrom(entries, n)
	cl = h.client()
	assert.Equal(t, uint64(6), h.submit(cl, "task_type", "x"))
}

func TestCore_Versions(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	id := h.submit(cl, "task_type", "x")
	assert.Equal(t, "0", h.query(cl, id).Value("version"), "a new task has version 0")
	ex := h.executor("e1", "x", 1)
	_, v := h.task(ex)
	assert.Equal(t, uint64(1), v)
	h.advance(DefaultStartTimeout) // taken back, dispatched again
	h.expect(ex, "cancel")
	_, v = h.task(ex)
	assert.Equal(t, uint64(2), v, "every dispatch adds 1")
	h.start(ex, id, v)
	h.accepted(ex, id, v, "failed")
	h.advance(time.Second)
	_, v = h.task(ex)
	assert.Equal(t, uint64(3), v)
	assert.Equal(t, "3", h.query(cl, id).Value("version"))
	h.checkReplay()
}

func TestCore_Attempts(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	id := h.submit(cl, "task_type", "x", "max_attempts", "3")
	st := h.query(cl, id)
	assert.Equal(t, "0", st.Value("attempt"), "new task: attempt 0")
	assert.Equal(t, "3", st.Value("max_attempts"))

	ex := h.executor("e1", "x", 1)
	m := h.expect(ex, "task")
	assert.Equal(t, "1", m.Value("attempt"), "first dispatch: attempt 1")
	assert.Equal(t, "3", m.Value("max_attempts"))

	// Back to pending (start timeout): the attempt is kept.
	h.advance(DefaultStartTimeout)
	h.expect(ex, "cancel")
	m = h.expect(ex, "task")
	assert.Equal(t, "2", m.Value("version"))
	assert.Equal(t, "1", m.Value("attempt"), "back to pending keeps the attempt")

	// A retry adds 1.
	h.start(ex, id, 2)
	h.accepted(ex, id, 2, "failed")
	assert.Equal(t, "1", h.query(cl, id).Value("attempt"), "task_state shows the latest dispatch's attempt")
	h.advance(time.Second)
	m = h.expect(ex, "task")
	assert.Equal(t, "2", m.Value("attempt"), "retry: +1")

	// Lost executor while dispatched: attempt kept.
	h.advance(DefaultHeartbeatTimeout)
	assert.True(t, h.fx.closed[ex])
	ex2 := h.executor("e2", "x", 1)
	m = h.expect(ex2, "task")
	assert.Equal(t, "4", m.Value("version"))
	assert.Equal(t, "2", m.Value("attempt"))
	h.start(ex2, id, 4)
	h.accepted(ex2, id, 4, "failed")
	h.advance(2 * time.Second)
	m = h.expect(ex2, "task")
	assert.Equal(t, "3", m.Value("attempt"))
	h.start(ex2, id, 5)
	h.accepted(ex2, id, 5, "failed", "error", "third")
	st = h.query(cl, id)
	assert.Equal(t, "failed", st.Value("state"), "attempts used up")
	assert.Equal(t, "3", st.Value("attempt"))
	assert.Equal(t, "third", st.Value("error"))
	h.checkReplay()

	h.send(cl, "submit", "req", "r", "task_type", "x", "max_attempts", "0")
	h.expectErr(cl, wire.CodeBadRequest)
}

// finish runs the next task frame for ex to success and returns its id.
func (h *harness) finish(ex PeerID) uint64 {
	h.t.Helper()
	id, v := h.task(ex)
	h.start(ex, id, v)
	h.accepted(ex, id, v, "succeeded")
	return id
}

func TestCore_Priority(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	prios := []int{0, 5, 9, 5, 0, 9, 1}
	for _, p := range prios {
		h.submit(cl, "task_type", "x", "priority", fmt.Sprint(p))
		h.advance(time.Millisecond)
	}
	// Default priority is 0.
	h.submit(cl, "task_type", "x")
	ex := h.executor("e1", "x", 1)
	var order []uint64
	for range len(prios) + 1 {
		order = append(order, h.finish(ex))
	}
	assert.Equal(t, []uint64{3, 6, 2, 4, 7, 1, 5, 8}, order, "9 first, FIFO within a priority")

	for _, bad := range []string{"10", "-1", "01", "x", ""} {
		h.send(cl, "submit", "req", "r", "task_type", "x", "priority", bad)
		h.expectErr(cl, wire.CodeBadRequest)
	}
	h.checkReplay()
}

// The FIFO is by the time a task became pending: a task taken back or
// retried queues behind those already pending.
func TestCore_PriorityFIFOByPendingTime(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	a := h.submit(cl, "task_type", "x", "priority", "5")
	id, _ := h.task(ex)
	require.Equal(t, a, id)
	b := h.submit(cl, "task_type", "x", "priority", "5")
	c := h.submit(cl, "task_type", "x", "priority", "5")
	h.advance(DefaultStartTimeout) // a back to pending, behind b and c
	h.expect(ex, "cancel")
	var order []uint64
	for range 3 {
		order = append(order, h.finish(ex))
	}
	assert.Equal(t, []uint64{b, c, a}, order)
	h.checkReplay()
}

func TestCore_Delay(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	a := h.submit(cl, "task_type", "x", "delay_ms", "1000") // due +1000
	h.advance(500 * time.Millisecond)
	b := h.submit(cl, "task_type", "x") // pending at +500
	h.advance(100 * time.Millisecond)
	c := h.submit(cl, "task_type", "x", "delay_ms", "200") // due +800
	assert.Equal(t, "pending", h.query(cl, a).Value("state"), "a delayed task is pending")
	h.advance(400 * time.Millisecond) // +1000: c and a are due
	h.checkReplay()

	ex := h.executor("e1", "x", 1)
	var order []uint64
	for range 3 {
		order = append(order, h.finish(ex))
	}
	assert.Equal(t, []uint64{b, c, a}, order, "queued by the time the delay ends")

	// Not dispatched before its time, even with a free slot.
	d := h.submit(cl, "task_type", "x", "delay_ms", "1000")
	h.advance(999 * time.Millisecond)
	h.none(ex)
	assert.Equal(t, Pending, h.state(d))
	h.advance(time.Millisecond)
	id, _ := h.task(ex)
	assert.Equal(t, d, id)
	h.checkReplay()

	// A delayed task can be cancelled, and its timer then does nothing.
	e := h.submit(cl, "task_type", "x", "delay_ms", "1000")
	h.send(cl, "cancel", "req", "c", "task_id", itoa(e))
	h.expect(cl, "cancelled")
	h.advance(2 * time.Second)
	assert.Equal(t, Cancelled, h.state(e))
	h.none(ex)
	h.checkReplay()
}

func TestCore_TaskTimeout(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	id := h.submit(cl, "task_type", "x", "timeout_ms", "2000", "max_attempts", "2")
	m := h.expect(ex, "task")
	assert.Equal(t, "2000", m.Value("timeout_ms"))
	h.advance(time.Second) // the timeout runs from started, not from dispatch
	h.start(ex, id, 1)
	h.advance(1999 * time.Millisecond)
	require.Equal(t, Running, h.state(id))
	h.none(ex)
	h.advance(time.Millisecond)
	cancel := h.expect(ex, "cancel")
	assert.Equal(t, itoa(id), cancel.Value("task_id"))
	assert.Equal(t, "1", cancel.Value("version"))
	require.Equal(t, Retrying, h.state(id), "timed out with attempts left: retried")
	assert.Equal(t, "timeout after 2000ms", h.query(cl, id).Value("error"))
	h.refused(ex, id, 1, wire.ReasonStale, "succeeded") // the dispatch was taken back

	h.advance(time.Second)
	_, v := h.task(ex)
	h.start(ex, id, v)
	h.advance(2 * time.Second)
	h.expect(ex, "cancel")
	assert.Equal(t, Failed, h.state(id), "timed out on the last attempt: failed")
	h.checkReplay()

	// timeout_ms=0: none.
	id = h.submit(cl, "task_type", "x")
	_, v = h.task(ex)
	h.start(ex, id, v)
	for range 20 {
		h.advance(10 * time.Second)
		h.heartbeat(ex, fmt.Sprintf("%d.%d", id, v))
	}
	assert.Equal(t, Running, h.state(id))
}

func TestCore_StartTimeout(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	id := h.submit(cl, "task_type", "x", "max_attempts", "1")
	h.expect(ex, "task")
	h.advance(DefaultStartTimeout - time.Millisecond)
	require.Equal(t, Dispatched, h.state(id))
	h.none(ex)
	h.advance(time.Millisecond)
	cancel := h.expect(ex, "cancel")
	assert.Equal(t, "1", cancel.Value("version"))
	// Back to pending and at once dispatched again on the freed slot, with
	// no attempt used (max_attempts=1 and still alive).
	m := h.expect(ex, "task")
	assert.Equal(t, "2", m.Value("version"))
	assert.Equal(t, "1", m.Value("attempt"))
	h.start(ex, id, 1)
	assert.Equal(t, Dispatched, h.state(id), "a started of the taken-back dispatch is ignored")
	h.refused(ex, id, 1, wire.ReasonStale, "succeeded")
	h.start(ex, id, 2)
	h.accepted(ex, id, 2, "succeeded")
	h.checkReplay()

	// Configurable.
	h = newHarness(t, func(c *Config) { c.StartTimeout = time.Second })
	cl = h.client()
	ex = h.executor("e1", "x", 1)
	h.submit(cl, "task_type", "x")
	h.expect(ex, "task")
	h.advance(time.Second)
	h.expect(ex, "cancel")
}

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

func TestCore_Cancel(t *testing.T) {
	for _, s := range []State{Waiting, Pending, Dispatched, Running, Retrying} {
		t.Run(s.String(), func(t *testing.T) {
			h, cl, ex := taskIn(t, s)
			ver := h.get(2).version
			h.drain(ex)
			h.send(cl, "cancel", "req", "c1", "task_id", "2")
			m := h.expect(cl, "cancelled")
			assert.Equal(t, "c1", m.Value("req"))
			assert.Equal(t, "2", m.Value("task_id"))
			assert.Equal(t, Cancelled, h.state(2))
			if s == Dispatched || s == Running {
				c := h.expect(ex, "cancel")
				assert.Equal(t, "2", c.Value("task_id"))
				assert.Equal(t, itoa(ver), c.Value("version"))
				if s == Running {
					h.refused(ex, 2, ver, wire.ReasonCancelled, "succeeded")
				}
				assert.Zero(t, h.c.execs["e1"].load, "the slot is free")
			}
			h.none(ex)
			// Cancelling again: the task is terminal.
			before := dump(h.c)
			h.send(cl, "cancel", "req", "c2", "task_id", "2")
			e := h.expectErr(cl, wire.CodeIllegalTransition)
			assert.Equal(t, "c2", e.Value("req"))
			assert.Equal(t, before, dump(h.c))
			h.checkReplay()
		})
	}
	for _, s := range []State{Succeeded, Failed, Cancelled} {
		t.Run(s.String(), func(t *testing.T) {
			h, cl, _ := taskIn(t, s)
			before := dump(h.c)
			h.send(cl, "cancel", "req", "c", "task_id", "2")
			h.expectErr(cl, wire.CodeIllegalTransition)
			assert.Equal(t, before, dump(h.c), "task unchanged")
			assert.Equal(t, s, h.state(2))
		})
	}
	t.Run("delayed", func(t *testing.T) {
		h := newHarness(t)
		cl := h.client()
		id := h.submit(cl, "task_type", "x", "delay_ms", "5000")
		h.send(cl, "cancel", "req", "c", "task_id", itoa(id))
		h.expect(cl, "cancelled")
		ex := h.executor("e1", "x", 1)
		h.advance(6 * time.Second)
		h.none(ex)
		h.checkReplay()
	})
	t.Run("unknown and bad", func(t *testing.T) {
		h := newHarness(t)
		cl := h.client()
		h.send(cl, "cancel", "req", "c", "task_id", "7")
		e := h.expectErr(cl, wire.CodeUnknownTask)
		assert.Equal(t, "c", e.Value("req"))
		h.send(cl, "cancel", "req", "c")
		h.expectErr(cl, wire.CodeBadRequest)
		h.send(cl, "cancel", "req", "c", "task_id", "x")
		h.expectErr(cl, wire.CodeBadRequest)
		assert.False(t, h.fx.closed[cl])
	})
	t.Run("frees the slot for the next task", func(t *testing.T) {
		h := newHarness(t)
		cl := h.client()
		ex := h.executor("e1", "x", 1)
		a := h.submit(cl, "task_type", "x")
		b := h.submit(cl, "task_type", "x")
		h.task(ex)
		h.send(cl, "cancel", "req", "c", "task_id", itoa(a))
		h.expect(cl, "cancelled")
		h.expect(ex, "cancel")
		id, _ := h.task(ex)
		assert.Equal(t, b, id)
	})
}

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

func TestCore_Retention(t *testing.T) {
	t.Run("age", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.Retention = time.Hour })
		cl := h.client()
		a := h.submit(cl, "task_type", "x")
		b := h.submit(cl, "task_type", "x")
		h.send(cl, "cancel", "req", "c", "task_id", itoa(a))
		h.expect(cl, "cancelled")
		h.advance(30 * time.Minute)
		h.send(cl, "cancel", "req", "c", "task_id", itoa(b))
		h.expect(cl, "cancelled")
		h.advance(30*time.Minute - time.Millisecond)
		assert.NotNil(t, h.c.tasks.get(a))
		h.advance(time.Millisecond) // one Tick at the limit drops it
		assert.Nil(t, h.c.tasks.get(a))
		assert.NotNil(t, h.c.tasks.get(b))
		h.send(cl, "query", "req", "q", "task_id", itoa(a))
		h.expectErr(cl, wire.CodeUnknownTask)
		h.send(cl, "cancel", "req", "q", "task_id", itoa(a))
		h.expectErr(cl, wire.CodeUnknownTask)
		h.send(cl, "stats", "req", "s")
		assert.Equal(t, "1", h.expect(cl, "stats").Value("tasks.cancelled"))
		h.checkReplay()
		// Non-terminal tasks are never dropped.
		c := h.submit(cl, "task_type", "x")
		h.advance(48 * time.Hour)
		assert.NotNil(t, h.c.tasks.get(c))
		assert.Nil(t, h.c.tasks.get(b))
		h.checkReplay()
	})
	t.Run("default 24h", func(t *testing.T) {
		h := newHarness(t)
		cl := h.client()
		a := h.submit(cl, "task_type", "x")
		h.send(cl, "cancel", "req", "c", "task_id", itoa(a))
		h.expect(cl, "cancelled")
		h.advance(24*time.Hour - time.Millisecond)
		assert.NotNil(t, h.c.tasks.get(a))
		h.advance(time.Millisecond)
		assert.Nil(t, h.c.tasks.get(a))
	})
	t.Run("count, newest by end time", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.RetentionMax = 2 })
		cl := h.client()
		for range 5 {
			h.submit(cl, "task_type", "x")
		}
		// End in the order 3, 1, 4, 2 (5 stays pending).
		for _, id := range []string{"3", "1", "4", "2"} {
			h.send(cl, "cancel", "req", "c", "task_id", id)
			h.expect(cl, "cancelled")
			h.clock.T = h.clock.T.Add(time.Millisecond)
		}
		h.c.Tick() // within one Tick
		assert.Nil(t, h.c.tasks.get(3))
		assert.Nil(t, h.c.tasks.get(1))
		assert.NotNil(t, h.c.tasks.get(4))
		assert.NotNil(t, h.c.tasks.get(2))
		assert.NotNil(t, h.c.tasks.get(5))
		h.checkReplay()
	})
	t.Run("many in one tick", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.RetentionMax = 10 })
		cl := h.client()
		const n = 3 * maxDropPerRecord
		for range n {
			h.submit(cl, "task_type", "x")
		}
		for id := 1; id <= n; id++ {
			h.send(cl, "cancel", "req", "c", "task_id", itoa(id))
		}
		h.drain(cl)
		h.c.Tick()
		assert.Equal(t, 10, h.c.tasks.count)
		assert.Equal(t, 10, h.c.counts[Cancelled])
		h.checkReplay()
	})
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

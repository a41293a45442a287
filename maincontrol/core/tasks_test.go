package core

import (
	"fmt"
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

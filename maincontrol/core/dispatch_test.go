package core

import (
	"fmt"
	"testing"

	"github.com/apollo11/apollo11/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCore_TwoListsRule(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 4)
	a := h.submit(cl, "task_type", "x")
	b := h.submit(cl, "task_type", "x")
	c := h.submit(cl, "task_type", "x") // dispatched, never listed
	for range 3 {
		h.task(ex)
	}
	h.start(ex, a, 1)
	h.start(ex, b, 1)
	la := fmt.Sprintf("%d.1", a)
	lb := fmt.Sprintf("%d.1", b)

	// Missing once, then listed: the count starts again.
	h.heartbeat(ex, la)
	h.heartbeat(ex, la+","+lb)
	h.heartbeat(ex, la)
	assert.Equal(t, Running, h.state(b))
	h.none(ex)
	// Missing from two consecutive lists: lost, cancel sent, retried.
	h.send(ex, "heartbeat", "seq", "9", "running", la)
	h.expect(ex, "pong")
	m := h.expect(ex, "cancel")
	assert.Equal(t, itoa(b), m.Value("task_id"))
	assert.Equal(t, "1", m.Value("version"))
	assert.Equal(t, Retrying, h.state(b))
	assert.Equal(t, Running, h.state(a))
	assert.Equal(t, Dispatched, h.state(c), "a dispatched task not listed is left alone")
	h.refused(ex, b, 1, wire.ReasonStale, "succeeded")

	// A listed token not dispatched or running there gets a cancel.
	e2 := h.executor("e2", "y", 1)
	h.send(e2, "heartbeat", "seq", "1", "running", la+",999.1")
	h.expect(e2, "pong")
	var cancels []string
	for _, f := range h.drain(e2) {
		require.Equal(t, "cancel", f.Type())
		cancels = append(cancels, f.Value("task_id")+"."+f.Value("version"))
	}
	assert.Equal(t, []string{la, "999.1"}, cancels)
	assert.Equal(t, Running, h.state(a), "listed elsewhere: nothing changes")

	// A wrong version of a task it holds: cancel that version.
	h.send(ex, "heartbeat", "seq", "10", "running", fmt.Sprintf("%s,%d.7", la, c))
	h.expect(ex, "pong")
	m = h.expect(ex, "cancel")
	assert.Equal(t, itoa(c), m.Value("task_id"))
	assert.Equal(t, "7", m.Value("version"))
	// A dispatched task listed in running=: it runs.
	h.heartbeat(ex, fmt.Sprintf("%s,%d.1", la, c))
	assert.Equal(t, Running, h.state(c))
	h.checkReplay()
}

// Each listed token is judged on its own (spec section 4, heartbeat): an
// id listed under several versions gets a cancel for every version that is
// not its current dispatch here, and a running task counts as listed only
// under its current version. Cancels go out in id, then version, order.
func TestCore_ReconcileTokens(t *testing.T) {
	h, _, ex := taskIn(t, Running)
	const a = 2 // version 1
	cancels := func(running string) []string {
		t.Helper()
		h.send(ex, "heartbeat", "seq", "1", "running", running)
		h.expect(ex, "pong")
		var out []string
		for _, f := range h.drain(ex) {
			require.Equal(t, "cancel", f.Type())
			out = append(out, f.Value("task_id")+"."+f.Value("version"))
		}
		return out
	}
	cur, old := fmt.Sprintf("%d.1", a), fmt.Sprintf("%d.2", a)

	tests := []struct {
		name, running string
		want          []string
	}{
		{"an unknown id under two versions", "4243.2,4243.1," + cur, []string{"4243.1", "4243.2"}},
		{"an unknown id under three versions", "50.1,50.3," + cur + ",50.2", []string{"50.1", "50.2", "50.3"}},
		{"a wrong version before the current one", old + "," + cur, []string{old}},
		{"a wrong version after the current one", cur + "," + old, []string{old}},
		{"the current token twice", cur + "," + cur, nil},
		{"unsorted unknown ids", "9.1,7.1," + cur + ",8.1", []string{"7.1", "8.1", "9.1"}},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, cancels(tc.running), tc.name)
		assert.Equal(t, Running, h.state(a), tc.name)
	}

	// Listed only under a wrong version: the running dispatch is missing.
	assert.Equal(t, []string{old}, cancels(old))
	assert.Equal(t, Running, h.state(a), "missing once")
	assert.Equal(t, []string{old, cur}, cancels(old), "missing twice: the old version cancelled, and the task lost")
	assert.Equal(t, Retrying, h.state(a))
	h.checkReplay()
}

func TestCore_DispatchChoice(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	e1 := h.executor("e1", "a", 2)
	e2 := h.executor("e2", "a,b", 2)
	e3 := h.executor("e3", "c", 5)
	var where []PeerID
	owner := func() PeerID {
		for _, p := range []PeerID{e1, e2, e3} {
			if len(h.fx.frames[p]) > 0 {
				h.expect(p, "task")
				return p
			}
		}
		return 0
	}
	for range 4 {
		h.submit(cl, "task_type", "a")
		where = append(where, owner())
	}
	assert.Equal(t, []PeerID{e1, e2, e1, e2}, where, "least loaded first, ties to the first registered")
	h.submit(cl, "task_type", "a")
	assert.Zero(t, owner(), "no free slot")
	b := h.submit(cl, "task_type", "b")
	assert.Zero(t, owner(), "only e2 takes b, and it is full")
	h.submit(cl, "task_type", "nobody")
	assert.Zero(t, owner())
	// e2 frees a slot: it gets the a task queued first (FIFO across
	// types is not defined; one task per free slot).
	h.start(e2, 2, 1)
	h.accepted(e2, 2, 1, "succeeded")
	assert.Equal(t, e2, owner())
	assert.Zero(t, owner())
	h.start(e2, 4, 1)
	h.accepted(e2, 4, 1, "succeeded")
	m := h.expect(e2, "task")
	assert.Equal(t, "1", m.Value("version"))
	assert.Contains(t, []string{"5", itoa(b)}, m.Value("task_id"))
	assert.Zero(t, owner())
	h.checkReplay()
}

func TestCore_DispatchLeastLoadedAcrossTypes(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	e1 := h.executor("e1", "a,b", 3)
	e2 := h.executor("e2", "a", 3)
	h.submit(cl, "task_type", "b") // to e1, the only b
	h.task(e1)
	h.submit(cl, "task_type", "a") // e1 has 1, e2 0: to e2
	h.task(e2)
	h.submit(cl, "task_type", "a") // 1 and 1: to e1, registered first
	h.task(e1)
	h.submit(cl, "task_type", "a") // 2 and 1: to e2
	h.task(e2)
	h.none(e1)
	h.none(e2)
}

// A slot is free as soon as the result arrives: the next task is sent on
// the same input, after the result_ack.
func TestCore_SlotFreeOnResult(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	a := h.submit(cl, "task_type", "x")
	b := h.submit(cl, "task_type", "x")
	h.task(ex)
	h.start(ex, a, 1)
	h.send(ex, "result", "task_id", itoa(a), "version", "1", "status", "succeeded")
	assert.Equal(t, []string{"result_ack", "task"}, h.types(ex))
	h.expect(ex, "result_ack")
	id, _ := h.task(ex)
	assert.Equal(t, b, id)
	// Also when the result fails the attempt or is refused illegal_value.
	c := h.submit(cl, "task_type", "x")
	h.start(ex, b, 1)
	h.send(ex, "result", "task_id", itoa(b), "version", "1", "status", "succeeded", "state.add.n", "x")
	assert.Equal(t, []string{"result_ack", "task"}, h.types(ex))
	h.drain(ex)
	h.start(ex, c, 1)
	h.submit(cl, "task_type", "x")
	h.send(ex, "result", "task_id", itoa(c), "version", "1", "status", "failed")
	assert.Equal(t, []string{"result_ack", "task"}, h.types(ex))
}

// An executor serving several types gives a freed slot to the most urgent
// of their pending tasks (priority, then first pending), not to the type
// it listed first: that one starved the others.
func TestCore_UrgencyAcrossTypes(t *testing.T) {
	for _, types := range []string{"a,b", "b,a"} {
		t.Run(types, func(t *testing.T) {
			h := newHarness(t)
			cl := h.client()
			ex := h.executor("e1", types, 1)
			busy := h.submit(cl, "task_type", "a")
			id, ver := h.task(ex)
			require.Equal(t, busy, id)
			urgentB := h.submit(cl, "task_type", "b", "priority", "9")
			olderA := h.submit(cl, "task_type", "a")
			newerB := h.submit(cl, "task_type", "b")
			newerA := h.submit(cl, "task_type", "a")
			var order []uint64
			for range 4 {
				h.start(ex, id, ver)
				h.accepted(ex, id, ver, "succeeded")
				id, ver = h.task(ex)
				order = append(order, id)
			}
			assert.Equal(t, []uint64{urgentB, olderA, newerB, newerA}, order)
		})
	}
}

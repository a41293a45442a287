package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordOf returns the log position (1: the first record) of the last
// record of kind about task id (any task when id is 0), failing if none.
func (h *harness) recordOf(kind recKind, id uint64) uint64 {
	h.t.Helper()
	var r record
	for i := len(h.fx.records) - 1; i >= 0; i-- {
		require.NoError(h.t, decodeRecord(h.fx.records[i], &r))
		if r.kind == kind && (id == 0 || r.id == id) {
			return uint64(i + 1)
		}
	}
	h.t.Fatalf("no %s record for task %d", kind, id)
	return 0
}

// lastGate returns what the latest task frame waits for.
func (h *harness) lastGate() uint64 {
	h.t.Helper()
	require.NotEmpty(h.t, h.fx.gates, "no task frame sent")
	return h.fx.gates[len(h.fx.gates)-1]
}

// A task frame waits for the submit that made its task dispatchable, not
// for its own dispatch record (spec section 4).
func TestGates_TaskWaitsForSubmitNotDispatch(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	id := h.submit(cl, "task_type", "x")
	h.task(ex)
	submit, dispatch := h.recordOf(recNew, id), h.recordOf(recDispatch, id)
	assert.Equal(t, submit, h.lastGate(), "waits for its submit")
	assert.Less(t, h.lastGate(), dispatch, "does not wait for its dispatch record")
}

// An executor that holds one task at a time gets its next task while the
// result that freed its slot still waits for the disk: the task frame may
// pass the result_ack (spec section 4).
func TestGates_TaskPassesResultAck(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	a := h.submit(cl, "task_type", "x")
	b := h.submit(cl, "task_type", "x")
	_, v := h.task(ex)
	h.start(ex, a, v)
	h.accepted(ex, a, v, "succeeded")
	got, _ := h.task(ex)
	require.Equal(t, b, got)
	end := h.recordOf(recEnd, a)
	assert.Equal(t, h.recordOf(recNew, b), h.lastGate())
	assert.Less(t, h.lastGate(), end, "the task frame does not wait for the result's record")
	assert.Equal(t, 1, h.fx.waits["result_ack"][WaitConfirm], "the result_ack waits for it")
}

// No task frame passes the executor's registered frame: it waits at least
// for the registration, even for a task submitted long before.
func TestGates_TaskWaitsForRegistered(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	id := h.submit(cl, "task_type", "x")
	ex := h.executor("e1", "x", 1) // dispatched in the same step
	got, _ := h.task(ex)
	require.Equal(t, id, got)
	reg := h.recordOf(recExecReg, 0)
	assert.Greater(t, reg, h.recordOf(recNew, id))
	assert.Equal(t, reg, h.lastGate(), "waits for the registration")
	assert.Equal(t, 1, h.fx.waits["registered"][WaitDurable], "which its registered frame waits for")
}

// What releases a task counts too: a dependency's end and the release, a
// requeue, the end of a retry delay; and a shared-state change, which the
// frame's state_version shows.
func TestGates_TaskWaitsForWhatReleasedIt(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	parent := h.submit(cl, "task_type", "x")
	child := h.submit(cl, "task_type", "x", "depends_on", itoa(parent))
	_, v := h.task(ex)
	h.start(ex, parent, v)
	h.accepted(ex, parent, v, "succeeded")
	got, _ := h.task(ex)
	require.Equal(t, child, got)
	assert.Equal(t, h.recordOf(recReady, child), h.lastGate(), "the release after its parent's end")
	assert.Greater(t, h.lastGate(), h.recordOf(recEnd, parent))

	// A requeue: the executor leaves before starting it.
	h.send(ex, "bye")
	h.expect(ex, "bye_ack")
	ex2 := h.executor("e2", "x", 1)
	got, _ = h.task(ex2)
	require.Equal(t, child, got)
	assert.Equal(t, max(h.recordOf(recBack, child), h.recordOf(recExecReg, 0)), h.lastGate())

	// A retry: failed, retried after its delay.
	h.start(ex2, child, mustVersion(t, h.c.tasks.get(child)))
	h.accepted(ex2, child, h.c.tasks.get(child).version, "failed")
	h.advance(time.Second) // the first retry's delay is at most 1 s
	got, _ = h.task(ex2)
	require.Equal(t, child, got)
	assert.Equal(t, h.recordOf(recReady, child), h.lastGate())

	// A shared-state change, shown by the next task frame's state_version.
	other := h.submit(cl, "task_type", "x")
	v = h.c.tasks.get(child).version
	h.start(ex2, child, v)
	h.accepted(ex2, child, v, "succeeded", "state.set.k", "1")
	m := h.expect(ex2, "task")
	require.Equal(t, itoa(other), m.Value("task_id"))
	assert.Equal(t, "1", m.Value("state_version"))
	assert.Equal(t, h.recordOf(recEnd, child), h.lastGate(), "the change it shows")
}

func mustVersion(t *testing.T, tk *task) uint64 {
	t.Helper()
	require.NotNil(t, tk)
	return tk.version
}

// Once the log is durable past a task's record, its frame waits for
// nothing the core remembers; the core keeps spans only for records not
// yet durable.
func TestGates_Durable(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ids := make([]uint64, 5)
	for i := range ids {
		ids[i] = h.submit(cl, "task_type", "x")
	}
	require.Len(t, h.c.gates.spans, 5)
	h.c.Durable(h.recordOf(recNew, ids[2]))
	assert.Len(t, h.c.gates.spans[h.c.gates.head:], 2)
	ex := h.executor("e1", "x", 5)
	for range ids {
		h.task(ex)
	}
	reg := h.recordOf(recExecReg, 0)
	for i, g := range h.fx.gates {
		assert.Equal(t, reg, g, "task %d waits for the registration only", i)
	}
	h.c.Durable(uint64(len(h.fx.records)))
	assert.Empty(t, h.c.gates.spans)

	// Spans: one record queuing several tasks is one span; lookups outside
	// every span wait for nothing.
	var g gates
	g.queued(3, 10)
	g.queued(4, 10)
	g.queued(6, 12)
	assert.Equal(t, []gateSpan{{3, 4, 10}, {6, 6, 12}}, g.spans)
	for seq, want := range map[uint64]uint64{1: 0, 3: 10, 4: 10, 5: 0, 6: 12, 7: 0} {
		assert.Equal(t, want, g.mark(seq), "seq %d", seq)
	}
	g.advance(10)
	assert.Equal(t, uint64(0), g.mark(3))
	assert.Equal(t, uint64(12), g.mark(6))
	g.queued(8, 9) // durable already
	assert.Equal(t, uint64(0), g.mark(8))
}

package core

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// One connection may not fill --max-pending alone: past its share its
// submits get queue_full while other connections still submit. Its
// tasks give their place back as they end; a keyed duplicate is still
// answered; once it closes its tasks count against --max-pending only.
func TestCore_PendingPerConnection(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPendingPerConn = 3 })
	a, b := h.client(), h.client()
	ids := make([]uint64, 3)
	for i := range ids {
		ids[i] = h.submit(a, "task_type", "t", "key", "k"+strconv.Itoa(i))
	}
	h.send(a, "submit", "req", "over", "task_type", "t")
	e := h.expectErr(a, wire.CodeQueueFull)
	assert.Equal(t, "over", e.Value("req"))
	assert.Contains(t, e.Value("message"), "--max-pending-per-conn 3")
	assert.Equal(t, 3, h.c.counts[Pending], "nothing made")

	h.send(a, "submit", "req", "dup", "task_type", "t", "key", "k0")
	assert.Equal(t, "true", h.expect(a, "submitted").Value("duplicate"), "a duplicate makes no task")
	h.submit(b, "task_type", "t") // another connection's share is its own

	h.send(b, "cancel", "req", "c", "task_id", strconv.FormatUint(ids[0], 10))
	h.expect(b, "cancelled")
	h.submit(a, "task_type", "t") // an ended task gave its place back
	h.send(a, "submit", "req", "over", "task_type", "t")
	h.expectErr(a, wire.CodeQueueFull)

	h.c.Closed(a)
	assert.Equal(t, 4, len(h.c.submitters), "a closed connection's tasks stay until they end")
	for _, id := range ids[1:] {
		h.send(b, "cancel", "req", "c", "task_id", strconv.FormatUint(id, 10))
		h.expect(b, "cancelled")
	}
	c := h.client()
	for range 3 {
		h.submit(c, "task_type", "t")
	}
	assert.Equal(t, 3, h.c.peers[c].pending)
	assert.Equal(t, 1, h.c.peers[b].pending)
}

// A task ended at its submit (a dependency already failed) takes no
// place; without a share set nothing is tracked.
func TestCore_PendingPerConnection_EndedAtOnceAndOff(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPendingPerConn = 1 })
	a := h.client()
	dep := h.submit(a, "task_type", "t")
	h.send(a, "cancel", "req", "c", "task_id", strconv.FormatUint(dep, 10))
	h.expect(a, "cancelled")
	h.submit(a, "task_type", "t", "depends_on", strconv.FormatUint(dep, 10))
	h.drain(a)
	assert.Zero(t, h.c.peers[a].pending, "cancelled at its submit")
	h.submit(a, "task_type", "t")

	off := newHarness(t)
	cl := off.client()
	for range 10 {
		off.submit(cl, "task_type", "t")
	}
	assert.Zero(t, len(off.c.submitters))
	assert.Zero(t, off.c.peers[cl].pending)
}

// The kept-executor and task-type caps are settings, and the budget
// counts what they and the per-connection share let peers make it hold.
func TestCore_RegistrationCapsAreSettings(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Unlogged, c.MaxTaskTypes, c.MaxKeptExecutors = true, 4, 2 })
	cl := h.client()
	for i := range 4 {
		h.submit(cl, "task_type", fmt.Sprintf("t%d", i))
	}
	h.send(cl, "submit", "req", "s", "task_type", "t4")
	assert.Contains(t, h.expectErr(cl, wire.CodeQueueFull).Value("message"), "4 task types are known, --max-task-types")

	for i := range 5 {
		h.c.Closed(h.executor(fmt.Sprintf("e%d", i), "t0", 1))
	}
	assert.LessOrEqual(t, len(h.c.execs)-h.c.liveExecs, 2)

	items, err := MemoryBudget(Config{MaxTaskTypes: 4, MaxKeptExecutors: 2, MaxPending: 10, MaxPendingPerConn: 1})
	require.NoError(t, err)
	got := map[int64]bool{}
	for _, it := range items {
		got[it.Bytes] = true
	}
	assert.True(t, got[4*TaskTypeCost], "task types: %v", items)
	assert.True(t, got[2*KeptExecutorCost], "executors kept: %v", items)
	assert.True(t, got[10*SubmitterCost], "each task's connection: %v", items)
	_, err = New(Config{MaxTaskTypes: -1}, newRecorder())
	require.ErrorIs(t, err, ErrConfig)
}

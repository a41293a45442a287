package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A task's history lists its transitions oldest first, with the version
// and executor of each dispatch, and no other task's.
func TestHistory_TaskTransitions(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Unlogged = true })
	cl := h.client()
	ex := h.executor("e1", "t", 1)
	id := h.submit(cl, "task_type", "t", "max_attempts", "2")
	other := h.submit(cl, "task_type", "u")
	_, ver := h.task(ex)
	h.send(ex, "started", "task_id", itoa(id), "version", itoa(ver))
	h.send(ex, "result", "task_id", itoa(id), "version", itoa(ver), "status", "succeeded")

	got := h.c.TaskHistory(id)
	var steps [][2]State
	for _, tr := range got {
		steps = append(steps, [2]State{tr.From, tr.To})
	}
	assert.Equal(t, [][2]State{{0, Pending}, {Pending, Dispatched}, {Dispatched, Running}, {Running, Succeeded}}, steps)
	require.Len(t, got, 4)
	assert.Equal(t, "e1", got[1].Executor)
	assert.Equal(t, ver, got[1].Version)
	assert.Len(t, h.c.TaskHistory(other), 1, "the other task was only submitted")
	assert.Empty(t, h.c.TaskHistory(999))
}

// The ring holds the latest historySize transitions of all tasks, and an
// idle core holds none.
func TestHistory_Bounded(t *testing.T) {
	var hs history
	assert.Zero(t, cap(hs.ring))
	for i := range historySize + 10 {
		hs.add(uint64(i), Transition{AtMs: int64(i)})
	}
	assert.Len(t, hs.ring, historySize)
	c := &Core{hist: hs}
	assert.Empty(t, c.TaskHistory(5), "overwritten")
	last := c.TaskHistory(historySize + 9)
	require.Len(t, last, 1)
	assert.Equal(t, int64(historySize+9), last[0].AtMs)
	assert.Len(t, c.TaskHistory(10), 1, "the oldest kept")
}

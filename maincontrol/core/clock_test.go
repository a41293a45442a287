package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCore_HoldClock: between HoldClock and ReleaseClock every input sees
// the instant read at HoldClock; after it, the clock is read again.
func TestCore_HoldClock(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	t0 := h.clock.Now()
	h.c.HoldClock()
	a := h.submit(cl, "task_type", "x")
	h.advance(5 * time.Second)
	b := h.submit(cl, "task_type", "x")
	h.c.ReleaseClock()
	c := h.submit(cl, "task_type", "x")

	created := func(id uint64) time.Time {
		info, ok := h.c.Task(id)
		require.True(t, ok)
		return info.Created
	}
	assert.Equal(t, t0.UnixMilli(), created(a).UnixMilli())
	assert.Equal(t, t0.UnixMilli(), created(b).UnixMilli(), "held: the batch shares one instant")
	assert.Equal(t, t0.Add(5*time.Second).UnixMilli(), created(c).UnixMilli(), "released: the clock is read again")
}

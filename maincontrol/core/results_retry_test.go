package core

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Scenario tests for results, retries, shared state and dependencies.

func TestCore_BackoffBounds(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		h := newHarness(t, func(c *Config) { c.Rand = rand.New(rand.NewPCG(seed, seed*7)) })
		lo, hi := map[uint32]time.Duration{}, map[uint32]time.Duration{}
		for n := uint32(1); n <= 40; n++ {
			full := min(60*time.Second, time.Duration(1<<min(n-1, 20))*time.Second)
			for range 200 {
				d := h.c.backoff(&taskType{name: "t"}, n)
				require.GreaterOrEqual(t, d, full/2, "n=%d", n)
				require.LessOrEqual(t, d, full, "n=%d", n)
				if lo[n] == 0 || d < lo[n] {
					lo[n] = d
				}
				hi[n] = max(hi[n], d)
			}
			// The factor is random: 200 draws spread over most of [0.5, 1].
			assert.Less(t, lo[n], full*6/10, "n=%d", n)
			assert.Greater(t, hi[n], full*9/10, "n=%d", n)
		}
		assert.LessOrEqual(t, hi[1], time.Second)
		assert.GreaterOrEqual(t, lo[7], 30*time.Second, "2^6 s is capped at 60 s")
	}
}

// The delay of a retry, observed end to end: after attempt n failed the
// task is pending again within [0.5, 1] x min(60 s, 2^(n-1) s).
func TestCore_RetryDelay(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		h := newHarness(t, func(c *Config) {
			c.Rand = rand.New(rand.NewPCG(seed, 99))
			c.HeartbeatTimeout = 10 * time.Minute
		})
		cl := h.client()
		ex := h.executor("e1", "x", 1)
		id := h.submit(cl, "task_type", "x", "max_attempts", "9")
		for n := 1; n <= 8; n++ {
			_, v := h.task(ex)
			h.start(ex, id, v)
			h.accepted(ex, id, v, "failed")
			full := min(60*time.Second, time.Duration(1<<(n-1))*time.Second)
			due := time.Duration(h.get(id).dueMs-h.c.now()) * time.Millisecond
			require.GreaterOrEqual(t, due, full/2, "attempt %d", n)
			require.LessOrEqual(t, due, full, "attempt %d", n)
			h.advance(due - time.Millisecond)
			require.Equal(t, Retrying, h.state(id))
			h.heartbeat(ex, "")
			h.advance(time.Millisecond)
		}
		h.checkReplay()
	}
}

func TestCore_RetryCap(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRetrying = 2 })
	cl := h.client()
	ex := h.executor("e1", "x", 4)
	ids := make([]uint64, 4)
	for i := range ids {
		ids[i] = h.submit(cl, "task_type", "x")
		h.task(ex)
		h.start(ex, ids[i], 1)
	}
	for _, id := range ids {
		h.accepted(ex, id, 1, "failed")
	}
	for _, id := range ids {
		require.Equal(t, Retrying, h.state(id))
	}
	armed := func(id uint64) bool { return h.get(id).flags&flagArmed != 0 }
	assert.True(t, armed(ids[0]))
	assert.True(t, armed(ids[1]))
	assert.False(t, armed(ids[2]), "beyond the cap: waits its turn")
	assert.False(t, armed(ids[3]))
	assert.Zero(t, h.get(ids[2]).dueMs, "no backoff timer while it waits")
	assert.Equal(t, 2, h.c.armed)
	h.checkReplay()

	// Cancelling an armed one lets the next start its backoff now.
	h.send(cl, "cancel", "req", "c", "task_id", itoa(ids[0]))
	h.expect(cl, "cancelled")
	assert.True(t, armed(ids[2]))
	start := h.c.now()
	due := h.get(ids[2]).dueMs
	assert.GreaterOrEqual(t, due-start, int64(500))
	assert.LessOrEqual(t, due-start, int64(1000))
	assert.False(t, armed(ids[3]))
	h.checkReplay()

	// ids[1]'s backoff ends: it goes to pending, and ids[3] starts its
	// backoff from then.
	d1 := h.get(ids[1]).dueMs
	h.clock.T = time.UnixMilli(min(d1, due))
	h.c.Tick()
	h.clock.T = time.UnixMilli(max(d1, due))
	h.c.Tick()
	require.True(t, armed(ids[3]))
	assert.Equal(t, 1, h.c.armed)
	assert.GreaterOrEqual(t, h.get(ids[3]).dueMs-min(d1, due), int64(500))
	h.advance(time.Second)
	assert.Zero(t, h.c.armed)
	for _, id := range ids[1:] {
		assert.Equal(t, Running, h.stateOrStart(ex, id))
	}
	h.checkReplay()
}

func TestCore_RetryCapNone(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRetrying = -1 })
	cl := h.client()
	ex := h.executor("e1", "x", 50)
	for range 50 {
		h.submit(cl, "task_type", "x")
	}
	for range 50 {
		id, v := h.task(ex)
		h.start(ex, id, v)
	}
	for id := uint64(1); id <= 50; id++ {
		h.accepted(ex, id, 1, "failed")
	}
	assert.Equal(t, 50, h.c.armed)
}

package core

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/wire"
)

// typeList names n task types, prefix0 to prefix(n-1).
func typeList(prefix string, n int) string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return strings.Join(names, ",")
}

// snapshotSize is what a snapshot of c would write.
func snapshotSize(t testing.TB, c *Core) int {
	n := 0
	require.NoError(t, c.Freeze().WriteTo(func(p []byte) error { n += len(p); return nil }))
	return n
}

// A peer that registers fresh executor ids, each naming 1,024 new task
// types, and disconnects, held 321-409 MB within 20 s, logged each one
// and wrote snapshots of up to 18 MB. Now the disconnected executors
// kept, the bytes of all registrations and the task types known are
// capped (the one disconnected longest forgotten first), and the logs of
// registrations are rate-limited.
func TestCore_RegistrationChurnBounded(t *testing.T) {
	var buf syncbuf.Buffer
	h := newHarness(t, withLog(&buf), func(c *Config) { c.Unlogged = true })
	cl := h.client()
	first := h.submit(cl, "task_type", "f0")
	ex := h.executor("first", "f0", 1)
	id, _ := h.task(ex)
	require.Equal(t, first, id)
	h.c.Closed(ex) // disconnected with a dispatch: the oldest kept

	const fresh = 100 // more than maxTaskTypes / 1,024
	for i := range fresh {
		p := h.open()
		h.send(p, "register", "executor_id", fmt.Sprintf("churn-%d", i), "task_types", typeList(fmt.Sprintf("t%d-", i), 1024), "slots", "1")
		h.expect(p, "registered")
		h.c.Closed(p)
		require.LessOrEqual(t, len(h.c.types), maxTaskTypes, "register %d", i)
	}
	assert.Nil(t, h.c.execs["first"], "the one disconnected longest was forgotten")
	assert.Equal(t, Pending, h.state(first), "its dispatch went back to pending, as at its timeout")

	const same = 400 // more than maxRegBytes / a register of 1,024 types
	types := typeList("s", 1024)
	for i := range same {
		p := h.open()
		h.send(p, "register", "executor_id", fmt.Sprintf("same-%d", i), "task_types", types, "slots", "1")
		h.expect(p, "registered")
		h.c.Closed(p)
		require.LessOrEqual(t, h.c.regBytes, maxRegBytes, "register %d", i)
	}
	assert.Less(t, snapshotSize(t, h.c), maxRegBytes+1<<20, "registrations do not bloat snapshots")

	for i := range maxKeptExecutors + 100 {
		p := h.open()
		h.send(p, "register", "executor_id", fmt.Sprintf("small-%d", i), "task_types", "x", "slots", "1")
		h.c.Closed(p)
		h.fx.frames[p] = nil
	}
	assert.LessOrEqual(t, len(h.c.execs)-h.c.liveExecs, maxKeptExecutors)
	assert.LessOrEqual(t, len(h.c.kept)-h.c.keptHead, 4*maxKeptExecutors+64)

	logged := strings.Count(buf.String(), `msg="executor registered"`)
	assert.LessOrEqual(t, logged, logsPerSecond, "the clock stood still: one second's worth of records")
	h.advance(time.Second)
	p := h.open()
	h.send(p, "register", "executor_id", "late", "task_types", "x", "slots", "1")
	assert.Contains(t, buf.String(), "logs_suppressed=", "the next record says how many were held back")
}

// When live executors hold the task types or registration bytes, no
// disconnected one can be forgotten to make room: a register naming new
// types gets unavailable and changes nothing, and a submit of a new type
// queue_full.
func TestCore_RegistrationRefusedPastTypeCap(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Unlogged = true })
	for i := range maxTaskTypes / 1024 {
		h.executor(fmt.Sprintf("live-%d", i), typeList(fmt.Sprintf("t%d-", i), 1024), 1)
	}
	require.Len(t, h.c.types, maxTaskTypes)
	p := h.open()
	h.send(p, "register", "executor_id", "one-more", "task_types", "brand-new", "slots", "1")
	e := h.expectErr(p, wire.CodeUnavailable)
	assert.Contains(t, e.Value("message"), "task types")
	assert.Nil(t, h.c.execs["one-more"])
	h.send(p, "register", "executor_id", "one-more", "task_types", "t0-1", "slots", "1")
	h.expect(p, "registered")

	cl := h.client()
	h.send(cl, "submit", "req", "s", "task_type", "another-new")
	h.expectErr(cl, wire.CodeQueueFull)
	h.submit(cl, "task_type", "t0-1")
}

// An executor coming back is not forgotten to make room for itself: the
// ones disconnected after it are, though it left first.
func TestCore_RegistrationComingBackSparedItself(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Unlogged = true })
	back := h.executor("back", "b", 1)
	h.c.Closed(back)
	for i := range maxTaskTypes/1024 - 1 {
		p := h.executor(fmt.Sprintf("gone-%d", i), typeList(fmt.Sprintf("t%d-", i), 1024), 1)
		h.c.Closed(p)
	}
	p := h.open()
	h.send(p, "register", "executor_id", "back", "task_types", typeList("new-", 1024), "slots", "1")
	h.expect(p, "registered")
	require.NotNil(t, h.c.execs["back"])
	assert.Nil(t, h.c.execs["gone-0"], "the one disconnected next was forgotten for room")
	assert.LessOrEqual(t, len(h.c.types), maxTaskTypes)
}

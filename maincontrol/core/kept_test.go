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

// A peer registering fresh ids with many new types, then leaving, is
// bounded: the disconnected executors kept, the bytes of registrations and
// the task types known are capped (the idle one disconnected longest
// forgotten first), and the logs of registrations are rate-limited.
func TestCore_RegistrationChurnBounded(t *testing.T) {
	var buf syncbuf.Buffer
	h := newHarness(t, withLog(&buf), func(c *Config) { c.Unlogged = true })
	cl := h.client()
	first := h.submit(cl, "task_type", "f0")
	ex := h.executor("first", "f0", 1)
	id, _ := h.task(ex)
	require.Equal(t, first, id)
	h.c.Closed(ex) // disconnected with a dispatch: kept, though the oldest

	const fresh = 100 // more than DefaultMaxTaskTypes / 1,024
	for i := range fresh {
		p := h.open()
		h.send(p, "register", "executor_id", fmt.Sprintf("churn-%d", i), "task_types", typeList(fmt.Sprintf("t%d-", i), 1024), "slots", "1")
		h.expect(p, "registered")
		h.c.Closed(p)
		require.LessOrEqual(t, len(h.c.types), DefaultMaxTaskTypes, "register %d", i)
	}
	assert.NotNil(t, h.c.execs["first"], "one holding a dispatch is kept until its timeout")
	assert.Equal(t, Dispatched, h.state(first), "its dispatch is still its own")

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

	for i := range DefaultMaxKeptExecutors + 100 {
		p := h.open()
		h.send(p, "register", "executor_id", fmt.Sprintf("small-%d", i), "task_types", "x", "slots", "1")
		h.c.Closed(p)
		h.fx.frames[p] = nil
	}
	assert.LessOrEqual(t, len(h.c.execs)-h.c.liveExecs, DefaultMaxKeptExecutors)
	assert.LessOrEqual(t, len(h.c.kept)-h.c.keptHead, 4*DefaultMaxKeptExecutors+64)

	logged := strings.Count(buf.String(), `msg="executor registered"`)
	assert.LessOrEqual(t, logged, logsPerSecond, "the clock stood still: one second's worth of records")
	h.advance(time.Second)
	p := h.open()
	h.send(p, "register", "executor_id", "late", "task_types", "x", "slots", "1")
	assert.Contains(t, buf.String(), "logs_suppressed=", "the next record says how many were held back")
}

// Executors forgotten wait in the liveness heap until their heartbeat
// timeout. There they must not keep their task types alive: under churn
// of 1,024 fresh types per register, that held gigabytes within the
// timeout although the core's own maps stayed within their caps.
func TestCore_ForgottenExecutorsHoldNoTypes(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Unlogged = true })
	for i := range 100 {
		p := h.open()
		h.send(p, "register", "executor_id", fmt.Sprintf("churn-%d", i), "task_types", typeList(fmt.Sprintf("t%d-", i), 1024), "slots", "1")
		h.expect(p, "registered")
		h.c.Closed(p)
	}
	gone := 0
	for _, l := range h.c.liveness {
		if e := l.exec; h.c.execs[e.id] != e {
			gone++
			assert.Empty(t, e.types, "forgotten executor %s", e.id)
			assert.Empty(t, e.entries, "forgotten executor %s", e.id)
		}
	}
	require.Greater(t, gone, 50, "the churn forgot executors still in the liveness heap")
}

// When live executors hold the task types or registration bytes, no
// disconnected one can be forgotten to make room: a register naming new
// types gets unavailable and changes nothing, and a submit of a new type
// queue_full.
func TestCore_RegistrationRefusedPastTypeCap(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Unlogged = true })
	for i := range DefaultMaxTaskTypes / 1024 {
		h.executor(fmt.Sprintf("live-%d", i), typeList(fmt.Sprintf("t%d-", i), 1024), 1)
	}
	require.Len(t, h.c.types, DefaultMaxTaskTypes)
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
	for i := range DefaultMaxTaskTypes/1024 - 1 {
		p := h.executor(fmt.Sprintf("gone-%d", i), typeList(fmt.Sprintf("t%d-", i), 1024), 1)
		h.c.Closed(p)
	}
	p := h.open()
	h.send(p, "register", "executor_id", "back", "task_types", typeList("new-", 1024), "slots", "1")
	h.expect(p, "registered")
	require.NotNil(t, h.c.execs["back"])
	assert.Nil(t, h.c.execs["gone-0"], "the one disconnected next was forgotten for room")
	assert.LessOrEqual(t, len(h.c.types), DefaultMaxTaskTypes)
}

// One peer's churn of fresh registrations must not cost other peers their
// work: an executor that disconnects while it runs a task, and comes back
// within its heartbeat timeout, finds the task still its own, however many
// registrations came and went meanwhile.
func TestCore_RegistrationChurnSparesExecutorsWithTasks(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	id := h.submit(cl, "task_type", "x", "max_attempts", "1")
	ex := h.executor("honest", "x", 1)
	tid, ver := h.task(ex)
	require.Equal(t, id, tid)
	h.start(ex, tid, ver)
	h.c.Closed(ex) // restarting

	for i := range DefaultMaxKeptExecutors + 100 {
		p := h.open()
		h.send(p, "register", "executor_id", fmt.Sprintf("churn-%d", i), "task_types", "y", "slots", "1")
		h.expect(p, "registered")
		h.c.Closed(p)
	}
	assert.LessOrEqual(t, len(h.c.execs)-h.c.liveExecs, DefaultMaxKeptExecutors)
	require.NotNil(t, h.c.execs["honest"], "an executor holding a task is kept until its timeout")
	assert.Equal(t, Running, h.state(id))

	h.advance(h.c.cfg.HeartbeatTimeout / 2)
	back := h.executor("honest", "x", 1)
	h.heartbeat(back, itoa(tid)+"."+itoa(ver))
	h.accepted(back, tid, ver, "succeeded")
	assert.Equal(t, Succeeded, h.state(id))
	assert.Equal(t, uint32(1), h.get(id).attempt, "no attempt was used up by the churn")
	h.checkReplay()
}

// When every disconnected executor kept holds tasks, none is forgotten to
// make room: a register of a fresh id gets unavailable and changes
// nothing, while those kept may still come back. One whose tasks end
// while it is away may be forgotten; the others are lost at their timeout.
func TestCore_RegistrationRefusedWhileKeptHoldTasks(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	for i := range DefaultMaxKeptExecutors {
		h.submit(cl, "task_type", "x")
		ex := h.executor(fmt.Sprintf("busy-%d", i), "x", 1)
		h.task(ex)
		h.c.Closed(ex)
	}
	require.Equal(t, DefaultMaxKeptExecutors, len(h.c.execs))

	p := h.open()
	h.send(p, "register", "executor_id", "fresh", "task_types", "x", "slots", "1")
	e := h.expectErr(p, wire.CodeUnavailable)
	assert.Contains(t, e.Value("message"), "disconnected executors")
	assert.Nil(t, h.c.execs["fresh"])
	for i := range DefaultMaxKeptExecutors {
		require.NotNil(t, h.c.execs[fmt.Sprintf("busy-%d", i)], "busy-%d", i)
	}

	back := h.executor("busy-0", "x", 1)
	h.heartbeat(back, "") // its dispatch was never started: it goes back to pending
	h.c.Closed(back)

	// One whose last task ends while it is away is idle: forgotten first.
	h.send(cl, "cancel", "req", "c", "task_id", itoa(h.c.execs["busy-1"].tasks.ids(nil)[0]))
	h.expect(cl, "cancelled")
	h.executor("fresh", "x", 1)
	assert.Nil(t, h.c.execs["busy-1"])
	assert.NotNil(t, h.c.execs["busy-2"])
	h.checkReplay()

	h.advance(h.c.cfg.HeartbeatTimeout + time.Second)
	h.executor("fresh-2", "x", 1)
	h.checkReplay()
}

// After a restart every known executor counts as disconnected: the idle
// ones may be forgotten for room, so that fresh ids still register.
func TestCore_RegistrationAfterRestartForgetsIdle(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	h.submit(cl, "task_type", "x")
	h.executor("busy", "x", 1)
	for i := range DefaultMaxKeptExecutors - 1 {
		h.c.Closed(h.executor(fmt.Sprintf("idle-%d", i), "x", 1))
	}
	h.restart()
	require.Equal(t, DefaultMaxKeptExecutors, len(h.c.execs)-h.c.liveExecs)

	h.executor("fresh", "x", 1)
	assert.NotNil(t, h.c.execs["busy"], "it holds a dispatch")
	assert.Equal(t, DefaultMaxKeptExecutors, len(h.c.execs))
	h.checkReplay()
}

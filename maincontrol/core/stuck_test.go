package core

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stuckHarness is a harness whose log is kept, with one executor of x.
func stuckHarness(t *testing.T, p Policy) (*harness, *bytes.Buffer, PeerID, PeerID) {
	var logs bytes.Buffer
	h := newHarness(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.HeartbeatTimeout = time.Hour
	})
	h.policies(Policies{Types: map[string]Policy{"x": p}})
	return h, &logs, h.client(), h.executor("e1", "x", 4)
}

func (h *harness) statsValue(cl PeerID, key string) string {
	h.t.Helper()
	h.send(cl, "stats", "req", "st")
	return h.expect(cl, "stats").Value(key)
}

// A task running past stuck_after shows in stats and in one warning; it
// stops counting when it ends.
func TestStuck_After(t *testing.T) {
	h, logs, cl, ex := stuckHarness(t, Policy{StuckAfter: 10 * time.Second})
	id := h.submit(cl, "task_type", "x")
	_, v := h.task(ex)
	h.start(ex, id, v)
	assert.Equal(t, "0", h.statsValue(cl, "stuck"))
	h.advance(9 * time.Second)
	assert.Equal(t, "0", h.statsValue(cl, "stuck"))
	at, ok := h.c.NextTickAt()
	require.True(t, ok)
	assert.LessOrEqual(t, at, h.c.now()+stuckSweepMs, "running tasks are checked every second")
	h.advance(time.Second)
	assert.Equal(t, "1", h.statsValue(cl, "stuck"))
	assert.Equal(t, Running, h.state(id), "action none: flagged only")
	for range 5 {
		h.advance(time.Second)
	}
	assert.Equal(t, 1, strings.Count(logs.String(), "task stuck"), "one warning per dispatch:\n%s", logs)
	assert.Contains(t, logs.String(), "rule=stuck_after")
	assert.Equal(t, StuckStats{Stuck: 1, Flagged: 1}, h.c.Stuck())
	// A reload that keeps the rule keeps the flag; one that drops it clears it.
	h.policies(Policies{Types: map[string]Policy{"x": {StuckAfter: 10 * time.Second, MaxRunning: 9}}})
	assert.Equal(t, 1, h.c.Stuck().Stuck)
	h.policies(Policies{Types: map[string]Policy{"x": {StuckAfter: 10 * time.Second}, "y": {}}})
	assert.Equal(t, 1, h.c.Stuck().Stuck)
	h.policies(Policies{Types: map[string]Policy{"x": {MaxRunning: 9}, "y": {StuckAfter: time.Second}}})
	assert.Equal(t, 0, h.c.Stuck().Stuck, "x has no stuck rule any more")
	h.policies(Policies{Types: map[string]Policy{"x": {StuckAfter: 10 * time.Second}}})
	h.advance(time.Second)
	assert.Equal(t, 1, h.c.Stuck().Stuck, "counted again")
	assert.Equal(t, 1, strings.Count(logs.String(), "task stuck"), "but warned once per dispatch:\n%s", logs)
	h.heartbeat(ex, itoa(id)+"."+itoa(v))
	h.accepted(ex, id, v, "succeeded")
	assert.Equal(t, "0", h.statsValue(cl, "stuck"))
	assert.Equal(t, StuckStats{Flagged: 1}, h.c.Stuck())
}

// The p99 rule: past factor x the type's recent p99 run time of
// succeeded tasks, once enough runs are known, and never under a second.
func TestStuck_P99(t *testing.T) {
	h, logs, cl, ex := stuckHarness(t, Policy{StuckFactor: 3})
	run := func(d time.Duration) {
		id := h.submit(cl, "task_type", "x")
		_, v := h.task(ex)
		h.start(ex, id, v)
		h.clock.T = h.clock.T.Add(d)
		h.accepted(ex, id, v, "succeeded")
	}
	for range runWindowMin - 1 {
		run(2 * time.Second)
	}
	long := h.submit(cl, "task_type", "x")
	_, lv := h.task(ex)
	h.start(ex, long, lv)
	h.advance(30 * time.Second)
	assert.Equal(t, "0", h.statsValue(cl, "stuck"), "too few runs known: no p99 rule")
	h.heartbeat(ex, itoa(long)+"."+itoa(lv))
	h.accepted(ex, long, lv, "succeeded") // the 20th run, of 30 s
	assert.EqualValues(t, 30_000, h.c.pol.stuck.runs["x"].p99Ms(), "nearest rank of 20: the highest")
	for range runWindowSize {
		run(2 * time.Second) // the 30 s run leaves the window
	}
	assert.EqualValues(t, 2000, h.c.pol.stuck.runs["x"].p99Ms())
	id := h.submit(cl, "task_type", "x")
	_, v := h.task(ex)
	h.start(ex, id, v)
	h.advance(5900 * time.Millisecond)
	assert.Equal(t, "0", h.statsValue(cl, "stuck"))
	h.advance(time.Second)
	assert.Equal(t, "1", h.statsValue(cl, "stuck"))
	assert.Contains(t, logs.String(), `rule="3 x p99 2s"`)

	// Fast runs: the limit is at least a second.
	w := runWindow{}
	for range 50 {
		w.add(1)
	}
	h.c.pol.stuck.runs["y"] = &w
	limit, _ := h.c.stuckLimit(&typePolicy{Policy: Policy{StuckFactor: 3}}, "y")
	assert.EqualValues(t, stuckFloorMs, limit)
}

// stuck_action requeue takes the task back through the normal transitions:
// its executor gets a cancel, the attempt is used, and it runs again at
// once under a new version; fail ends it failed.
func TestStuck_Actions(t *testing.T) {
	h, _, cl, ex := stuckHarness(t, Policy{StuckAfter: 5 * time.Second, StuckAction: StuckRequeue, MaxAttempts: 2})
	id := h.submit(cl, "task_type", "x")
	_, v := h.task(ex)
	h.start(ex, id, v)
	h.advance(6 * time.Second)
	c := h.expect(ex, "cancel")
	assert.Equal(t, itoa(v), c.Value("version"))
	id2, v2 := h.task(ex)
	assert.Equal(t, id, id2)
	assert.Greater(t, v2, v)
	assert.EqualValues(t, 2, h.get(id).attempt)
	h.refused(ex, id, v, "stale", "succeeded")
	h.start(ex, id, v2)
	h.advance(6 * time.Second)
	h.expect(ex, "cancel")
	assert.Equal(t, Failed, h.state(id), "attempts used up")
	assert.Equal(t, StuckStats{Flagged: 2, TakenBack: 2}, h.c.Stuck())
	h.checkReplay()

	h2, _, cl2, ex2 := stuckHarness(t, Policy{StuckAfter: 5 * time.Second, StuckAction: StuckFail})
	id = h2.submit(cl2, "task_type", "x")
	_, v = h2.task(ex2)
	h2.start(ex2, id, v)
	h2.advance(5 * time.Second)
	h2.expect(ex2, "cancel")
	assert.Equal(t, Failed, h2.state(id))
	assert.Equal(t, "stuck: running 5s, past stuck_after 5s", h2.get(id).errText())
	assert.EqualValues(t, 1, h2.get(id).attempt)
	h2.refused(ex2, id, v, "stale", "succeeded")
	h2.checkReplay()
}

// While the log cannot be written the action waits; the task is flagged
// at once and taken back when writes resume.
func TestStuck_ActionWaitsForTheLog(t *testing.T) {
	h, logs, cl, ex := stuckHarness(t, Policy{StuckAfter: time.Second, StuckAction: StuckFail})
	id := h.submit(cl, "task_type", "x")
	_, v := h.task(ex)
	h.start(ex, id, v)
	h.c.SetAvailable(false)
	h.advance(2 * time.Second)
	assert.Equal(t, Running, h.state(id))
	assert.Equal(t, 1, h.c.Stuck().Stuck)
	h.c.SetAvailable(true)
	h.advance(time.Second)
	assert.Equal(t, Failed, h.state(id))
	assert.Equal(t, 1, strings.Count(logs.String(), "task stuck"))
}

// A restarted main control judges restored tasks once their executor
// lists them; and stuck rules need policies again (they are config).
func TestStuck_AfterRestart(t *testing.T) {
	h, _, cl, ex := stuckHarness(t, Policy{StuckAfter: 5 * time.Second})
	id := h.submit(cl, "task_type", "x")
	_, v := h.task(ex)
	h.start(ex, id, v)
	h.restart()
	assert.Equal(t, StuckStats{}, h.c.Stuck(), "policies are not durable")
	h.policies(Policies{Types: map[string]Policy{"x": {StuckAfter: 5 * time.Second}}})
	h.advance(6 * time.Second)
	assert.Equal(t, 0, h.c.Stuck().Stuck, "restored, not yet listed")
	ex = h.executor("e1", "x", 4)
	h.heartbeat(ex, itoa(id)+"."+itoa(v))
	h.advance(time.Second)
	assert.Equal(t, 1, h.c.Stuck().Stuck, "running since before the restart")
}

func TestStuck_RunWindowsBounded(t *testing.T) {
	h, logs, cl, _ := stuckHarness(t, Policy{})
	h.policies(Policies{Default: Policy{StuckFactor: 2}})
	for i := range maxRunWindows + 5 {
		typ := "t" + itoa(i)
		p := h.executor("w"+itoa(i), typ, 1)
		id := h.submit(cl, "task_type", typ)
		_, v := h.task(p)
		h.start(p, id, v)
		h.accepted(p, id, v, "succeeded")
	}
	assert.Len(t, h.c.pol.stuck.runs, maxRunWindows)
	assert.Equal(t, 1, strings.Count(logs.String(), "run times are kept for at most"))
}

// Stuck, a getter, reads only: the sweep forgets a flag whose task ended.
func TestStuck_GetterIsPure(t *testing.T) {
	h, _, cl, ex := stuckHarness(t, Policy{StuckAfter: 2 * time.Second})
	id := h.submit(cl, "task_type", "x")
	_, v := h.task(ex)
	h.start(ex, id, v)
	h.advance(3 * time.Second)
	require.Equal(t, 1, h.c.Stuck().Stuck)
	h.send(ex, "result", "task_id", itoa(id), "version", itoa(v), "status", "succeeded")
	require.Equal(t, 0, h.c.Stuck().Stuck, "an ended task is not stuck")
	assert.Len(t, h.c.pol.stuck.flagged, 1, "the getter left the flag for the sweep")
	h.advance(2 * time.Second)
	assert.Empty(t, h.c.pol.stuck.flagged, "the sweep forgot it")
}

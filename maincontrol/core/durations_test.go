package core

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/syncbuf"
)

func TestProgress_KeptForTheCurrentDispatch(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.StartTimeout = time.Second })
	cl := h.client()
	ex := h.executor("e1", "a", 1)
	id := h.submit(cl, "task_type", "a")
	_, ver := h.task(ex)
	q := h.query(cl, id)
	assert.False(t, q.Has("progress"), "no progress yet")

	h.send(ex, "progress", "task_id", itoa(id), "version", itoa(ver), "percent", "10")
	q = h.query(cl, id)
	assert.Equal(t, "10", q.Value("progress"), "kept while dispatched")
	assert.False(t, q.Has("progress_note"))
	h.start(ex, id, ver)
	long := strings.Repeat("é", 200) // 400 bytes
	h.send(ex, "progress", "task_id", itoa(id), "version", itoa(ver), "percent", "40", "note", long)
	q = h.query(cl, id)
	assert.Equal(t, "40", q.Value("progress"))
	note := q.Value("progress_note")
	assert.LessOrEqual(t, len(note), maxProgressNote)
	assert.True(t, strings.HasSuffix(note, "..."))
	assert.True(t, strings.HasPrefix(long, strings.TrimSuffix(note, "...")), "cut on a rune boundary")

	// Another version's progress is ignored; the task's stays.
	h.send(ex, "progress", "task_id", itoa(id), "version", itoa(ver+1), "percent", "99")
	assert.Equal(t, "40", h.query(cl, id).Value("progress"))
	h.send(ex, "progress", "task_id", itoa(id), "version", itoa(ver), "percent", "101")
	h.expect(ex, "error")

	// A failed attempt forgets it; the next dispatch starts without one.
	h.accepted(ex, id, ver, "failed")
	assert.False(t, h.query(cl, id).Has("progress"))
	h.advance(2 * time.Second)
	_, ver2 := h.task(ex)
	require.Greater(t, ver2, ver)
	assert.False(t, h.query(cl, id).Has("progress"))
	assert.Empty(t, h.c.progs)
}

func TestDurations_QueuedAndRun(t *testing.T) {
	var logs syncbuf.Buffer
	h := newHarness(t, withLog(&logs))
	cl := h.client()
	id := h.submit(cl, "task_type", "a")
	never := h.submit(cl, "task_type", "b")
	h.advance(3 * time.Second)
	ex := h.executor("e1", "a", 1)
	_, ver := h.task(ex)
	h.advance(500 * time.Millisecond)
	h.start(ex, id, ver)
	q := h.query(cl, id)
	assert.False(t, q.Has("queued_ms"), "only once ended")
	h.advance(2 * time.Second)
	h.accepted(ex, id, ver, "succeeded")
	q = h.query(cl, id)
	assert.Equal(t, "3500", q.Value("queued_ms"))
	assert.Equal(t, "2000", q.Value("run_ms"))

	h.advance(time.Second)
	h.send(cl, "cancel", "req", "c", "task_id", itoa(never))
	h.expect(cl, "cancelled")
	q = h.query(cl, never)
	assert.Equal(t, "6500", q.Value("queued_ms"))
	assert.False(t, q.Has("run_ms"), "never started")

	// The start is durable: replay and a snapshot keep the durations.
	h.checkReplay()
	h.restartFrom(snapshotEntries(t, h.c), len(h.fx.records))
	cl = h.client()
	q = h.query(cl, id)
	assert.Equal(t, "3500", q.Value("queued_ms"))
	assert.Equal(t, "2000", q.Value("run_ms"))

	// Transition lines carry the time spent in the state left.
	out := logs.String()
	assert.Contains(t, out, "from=running to=succeeded")
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(line, "from=running to=succeeded"):
			assert.Contains(t, line, "in_state_ms=2000")
		case strings.Contains(line, "from=dispatched to=running"):
			assert.Contains(t, line, "in_state_ms=500")
		case strings.Contains(line, "from=pending to=dispatched"):
			assert.Contains(t, line, "in_state_ms=3000")
		case strings.Contains(line, "from=none"):
			assert.Contains(t, line, "in_state_ms=0")
		}
	}
}

func TestDurations_StartOffset(t *testing.T) {
	assert.EqualValues(t, 1, startOffset(100, 100))
	assert.EqualValues(t, 1, startOffset(100, 50), "a clock that went back counts 0")
	assert.EqualValues(t, 5001, startOffset(0, 5000))
	assert.EqualValues(t, startTooLate, startOffset(0, 1<<32))
	tk := &task{createdMs: 10, updatedMs: 100, startOff: startOffset(10, 40)}
	q, r, ok := durations(tk)
	assert.True(t, ok)
	assert.EqualValues(t, 30, q)
	assert.EqualValues(t, 60, r)
}

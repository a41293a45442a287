package core

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// pause sends pause or resume for typ and returns its changed value.
func (h *harness) pause(p PeerID, typ, taskType string) string {
	h.t.Helper()
	h.send(p, typ, "req", "p", "task_type", taskType)
	m := h.expect(p, typ+"d")
	require.Equal(h.t, taskType, m.Value("task_type"))
	require.Equal(h.t, "p", m.Value("req"))
	return m.Value("changed")
}

func TestPause_HoldsDispatchesUntilResume(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "a,b", 4)
	running := h.submit(cl, "task_type", "a")
	id, ver := h.task(ex)
	require.Equal(t, running, id)
	h.start(ex, id, ver)

	assert.Equal(t, "true", h.pause(cl, "pause", "a"))
	assert.Equal(t, 1, h.fx.waits["paused"][WaitConfirm])
	assert.Equal(t, "false", h.pause(cl, "pause", "a"), "already paused")
	assert.Equal(t, "1", h.statsValue(cl, "types.paused"))

	// Submits are accepted; nothing of the type is dispatched, others are.
	held := h.submit(cl, "task_type", "a")
	h.submit(cl, "task_type", "b")
	m := h.expect(ex, "task")
	assert.Equal(t, "b", m.Value("task_type"))
	h.none(ex)
	// The running task finishes as usual.
	h.accepted(ex, id, ver, "succeeded")
	h.none(ex)
	assert.Equal(t, Pending, h.state(held))

	// A paused type survives a restart, from the log and from a snapshot.
	h.checkReplay()
	h.restart()
	assert.Equal(t, 1, h.c.PausedTypes())
	entries := snapshotEntries(t, h.c)
	h.restartFrom(entries, len(h.fx.records))
	assert.Equal(t, 1, h.c.PausedTypes())
	cl = h.client()
	ex = h.executor("e2", "a", 1)
	h.none(ex)
	assert.Equal(t, Pending, h.state(held))

	assert.Equal(t, "true", h.pause(cl, "resume", "a"))
	id, _ = h.task(ex)
	assert.Equal(t, held, id, "resume dispatches at once")
	assert.Equal(t, "false", h.pause(cl, "resume", "a"), "not paused")
	assert.Equal(t, "0", h.statsValue(cl, "types.paused"))
	h.checkReplay()
}

func TestPause_TakenBackTaskWaits(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.StartTimeout = time.Second })
	cl := h.client()
	ex := h.executor("e1", "a", 1)
	id := h.submit(cl, "task_type", "a")
	h.task(ex)
	h.pause(cl, "pause", "a")
	h.advance(2 * time.Second) // start timeout: back to pending
	h.drain(ex)
	assert.Equal(t, Pending, h.state(id))
	h.advance(2 * time.Second)
	assert.NotContains(t, h.types(ex), "task")
}

func TestPause_UnknownTypeAndBounds(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	// A type with no task yet can be paused; its first task waits.
	assert.Equal(t, "true", h.pause(cl, "pause", "later, with\nany=name"))
	ex := h.executor("e1", "x", 1)
	h.send(ex, "types", "add", "y")
	h.expect(ex, "types_ok")
	assert.Equal(t, "true", h.pause(cl, "pause", "y"))
	h.submit(cl, "task_type", "y")
	h.none(ex)

	for _, kv := range [][]string{{"pause"}, {"pause", "task_type", ""}, {"resume"}} {
		h.send(cl, kv[0], append([]string{"req", "b"}, kv[1:]...)...)
		h.expectErr(cl, wire.CodeBadRequest)
	}
	for i := len(h.c.paused); i < maxPausedTypes; i++ {
		h.pause(cl, "pause", "t"+strconv.Itoa(i))
	}
	h.send(cl, "pause", "req", "b", "task_type", "one-more")
	assert.Contains(t, h.expectErr(cl, wire.CodeBadRequest).Value("message"), "1024 types are paused")
	h.c.SetAvailable(false)
	h.send(cl, "resume", "req", "u", "task_type", "y")
	h.expectErr(cl, wire.CodeUnavailable)
	h.c.SetAvailable(true)
	ops := h.c.Ops()
	assert.EqualValues(t, maxPausedTypes, ops.Pauses)
	h.checkReplay()
}

// A paused name is at most 1 KiB: 1,024 names near max_frame would put
// a GiB into every snapshot.
func TestPause_NameLengthBound(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	assert.Equal(t, "true", h.pause(cl, "pause", strings.Repeat("n", 1024)))
	long := strings.Repeat("n", 1025)
	h.send(cl, "pause", "req", "b", "task_type", long)
	assert.Contains(t, h.expectErr(cl, wire.CodeBadRequest).Value("message"), "longer than 1024 bytes")
	assert.Len(t, h.c.paused, 1)
	// resume takes any name: a longer one is not paused.
	assert.Equal(t, "false", h.pause(cl, "resume", long))
	h.checkReplay()
}

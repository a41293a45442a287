package core

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// stateChanged sends a state_set or state_del and pops its reply.
func (h *harness) stateChanged(p PeerID, typ string, kv ...string) *wire.Message {
	h.t.Helper()
	h.send(p, typ, append([]string{"req", "r"}, kv...)...)
	m := h.expect(p, "state_changed")
	require.Equal(h.t, "r", m.Value("req"))
	return m
}

func TestStateFix_SetDeleteAndCompareAndSet(t *testing.T) {
	h := newHarness(t)
	cl := h.client()

	m := h.stateChanged(cl, "state_set", "key", "mode", "value", "a=b\nc")
	assert.Equal(t, "1", m.Value("state_version"))
	assert.Equal(t, "true", m.Value("changed"))
	assert.Equal(t, "mode", m.Value("key"))
	assert.Equal(t, 1, h.fx.waits["state_changed"][WaitConfirm], "confirms a change: waits for the disk")

	// A stale expected version changes nothing and names the current one.
	h.send(cl, "state_set", "req", "x", "key", "mode", "value", "z", "state_version", "0")
	e := h.expectErr(cl, wire.CodeConflict)
	assert.Equal(t, "x", e.Value("req"))
	assert.Equal(t, "1", e.Value("state_version"))
	assert.Contains(t, e.Value("message"), "state_version is 1, not 0")
	assert.False(t, h.fx.closed[cl], "a conflict keeps the connection")

	m = h.stateChanged(cl, "state_set", "key", "n", "value", "", "state_version", "1")
	assert.Equal(t, "2", m.Value("state_version"))
	state, ver := h.c.SharedState()
	assert.Equal(t, map[string]string{"mode": "a=b\nc", "n": ""}, state)
	assert.EqualValues(t, 2, ver)

	// Delete: set key, then a key not set (no change, CAS still checked).
	m = h.stateChanged(cl, "state_del", "key", "mode")
	assert.Equal(t, "3", m.Value("state_version"))
	assert.Equal(t, "true", m.Value("changed"))
	m = h.stateChanged(cl, "state_del", "key", "mode", "state_version", "3")
	assert.Equal(t, "3", m.Value("state_version"))
	assert.Equal(t, "false", m.Value("changed"))
	h.send(cl, "state_del", "req", "y", "key", "mode", "state_version", "2")
	assert.Equal(t, "3", h.expectErr(cl, wire.CodeConflict).Value("state_version"))
	assert.EqualValues(t, 2, h.c.Ops().StateConflicts)
	assert.Equal(t, stateEntryBytes("n", ""), h.c.StateBytes())

	// Executors see the new version in their task frames and state_get.
	ex := h.executor("e1", "t", 1)
	h.submit(cl, "task_type", "t")
	assert.Equal(t, "3", h.expect(ex, "task").Value("state_version"))
	h.send(ex, "state_get")
	got := h.expect(ex, "state")
	assert.Equal(t, "3", got.Value("state_version"))
	assert.Equal(t, "", got.Value("state.n"))
	assert.False(t, got.Has("state.mode"))

	h.checkReplay()
	entries := snapshotEntries(t, h.c)
	h.restartFrom(entries, len(h.fx.records))
	state, ver = h.c.SharedState()
	assert.Equal(t, map[string]string{"n": ""}, state)
	assert.EqualValues(t, 3, ver)
}

func TestStateFix_BadRequests(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxStateBytes = 200 })
	cl := h.client()
	long := strings.Repeat("k", maxStateName)
	for _, kv := range [][]string{
		{"state_set", "value", "v"},                    // no key
		{"state_set", "key", "", "value", "v"},         // empty key
		{"state_set", "key", "Upper", "value", "v"},    // not a key character
		{"state_set", "key", "a b", "value", "v"},      // space
		{"state_set", "key", long + "k", "value", "v"}, // 55 bytes
		{"state_set", "key", "k"},                      // no value
		{"state_set", "key", "k", "value", "v", "state_version", "x"},
		{"state_del", "key", "k", "state_version", "-1"},
		{"state_set", "key", "big", "value", strings.Repeat("v", 200)}, // past the cap
	} {
		h.send(cl, kv[0], append([]string{"req", "b"}, kv[1:]...)...)
		e := h.expectErr(cl, wire.CodeBadRequest)
		assert.Equal(t, "b", e.Value("req"), "%v", kv)
	}
	h.stateChanged(cl, "state_set", "key", long, "value", "v")
	assert.Empty(t, h.c.state["big"])

	h.c.SetAvailable(false)
	h.send(cl, "state_set", "req", "u", "key", "k", "value", "v")
	h.expectErr(cl, wire.CodeUnavailable)
	h.c.SetAvailable(true)
	_, ver := h.c.SharedState()
	assert.EqualValues(t, 1, ver)
}

func TestStateFix_NotFromExecutors(t *testing.T) {
	h := newHarness(t)
	ex := h.executor("e1", "t", 1)
	h.send(ex, "state_set", "key", "k", "value", "v")
	h.expectErr(ex, wire.CodeNotPermitted)
}

// With an admin token, state repairs and pauses need its proof in hello.
func TestStateFix_AdminTokenRequired(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.AdminToken = []byte("admin-secret") })
	cl := h.client()
	for _, kv := range [][]string{
		{"state_set", "key", "k", "value", "v"}, {"state_del", "key", "k"},
		{"pause", "task_type", "t"}, {"resume", "task_type", "t"},
	} {
		h.send(cl, kv[0], append([]string{"req", "a"}, kv[1:]...)...)
		assert.Equal(t, "a", h.expectErr(cl, wire.CodeNotPermitted).Value("req"), "%v", kv)
	}
	assert.Empty(t, h.c.state)
	assert.Empty(t, h.c.paused)
	// Reads need no proof.
	h.send(cl, "type_list", "req", "l")
	h.expect(cl, "type_page")
}

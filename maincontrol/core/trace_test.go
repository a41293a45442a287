package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTrace_Derived pins the trace ids the main control makes for submits
// without one: 32 lower-case hex digits, the same in the task frame and in
// task_state, different for every task, kept through a restart from the
// log and from a snapshot; a client's own trace id is passed on as sent.
func TestTrace_Derived(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "echo", 4)
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)

	a := h.submit(cl, "task_type", "echo")
	b := h.submit(cl, "task_type", "echo")
	own := h.submit(cl, "task_type", "echo", "trace_id", "mine")
	traces := map[uint64]string{}
	for range 3 {
		m := h.expect(ex, "task")
		id, _ := tokenOf(t, m)
		traces[id] = m.Value("trace_id")
	}
	require.Regexp(t, hex32, traces[a])
	require.Regexp(t, hex32, traces[b])
	assert.NotEqual(t, traces[a], traces[b])
	assert.Equal(t, "mine", traces[own])
	for id, tr := range traces {
		assert.Equal(t, tr, h.query(cl, id).Value("trace_id"), "task_state of task %d", id)
		info, ok := h.c.Task(id)
		require.True(t, ok)
		assert.Equal(t, tr, info.TraceID)
	}

	h.restart()
	for id, tr := range traces {
		assert.Equal(t, tr, h.query(h.client(), id).Value("trace_id"), "after a restart from the log, task %d", id)
	}
	entries, n := snapshotEntries(t, h.c), len(h.fx.records)
	h.restartFrom(entries, n)
	for id, tr := range traces {
		assert.Equal(t, tr, h.query(h.client(), id).Value("trace_id"), "after a restart from a snapshot, task %d", id)
	}
}

// TestTrace_Unique: the first half of a derived trace id is a bijection of
// the task id, so no two tasks share one, even created in one millisecond.
func TestTrace_Unique(t *testing.T) {
	seen := map[string]uint64{}
	var buf [32]byte
	for id := uint64(1); id <= 100_000; id++ {
		deriveTrace(&buf, id, 1_700_000_000_000)
		s := string(buf[:])
		prev, dup := seen[s]
		require.False(t, dup, "tasks %d and %d share trace id %s", prev, id, s)
		seen[s] = id
	}
	deriveTrace(&buf, 1, 1_700_000_000_001)
	_, dup := seen[string(buf[:])]
	assert.False(t, dup, "task 1 of a fresh data dir, a millisecond later, gets a new trace id")
}

// Derived trace ids are not stored, so their encoding must never change:
// these values were produced by the first implementation.
func TestTrace_DerivedValuesPinned(t *testing.T) {
	var buf [32]byte
	for id, want := range map[uint64]string{
		1:        "910a2dec89025cc168334db9381a2e74",
		12345678: "11d5cf7b5b0ae67951884bb4a6a27d20",
		1 << 63:  "481ec0a212a9f3db9652f2585fe86bdb",
	} {
		deriveTrace(&buf, id, 1_700_000_000_000)
		assert.Equal(t, want, string(buf[:]), "task %d", id)
	}
}

func TestPutHex8(t *testing.T) {
	values := []uint32{0, 9, 10, 15, 16, 0x9a9a9a9a, 0xa9a9a9a9, 0x01234567, 0x89abcdef, 0xffffffff}
	r := rand.New(rand.NewPCG(5, 6))
	for range 10_000 {
		values = append(values, r.Uint32())
	}
	var buf [8]byte
	for _, v := range values {
		putHex8(buf[:], v)
		require.Equal(t, fmt.Sprintf("%08x", v), string(buf[:]))
	}
}

// Every transition is logged with task_id, version, from, to, executor
// and trace_id; a task's first one comes from "none", not from an
// unnamed state.
func TestTrace_TransitionLogs(t *testing.T) {
	var buf bytes.Buffer
	h := newHarness(t, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	ex := h.executor("e1", "echo", 1)
	id := h.submit(h.client(), "task_type", "echo", "trace_id", "tr-1")
	h.expect(ex, "task")
	var lines []map[string]any
	for _, l := range bytes.Split(buf.Bytes(), []byte("\n")) {
		var m map[string]any
		if json.Unmarshal(l, &m) == nil && m["msg"] == "task transition" {
			lines = append(lines, m)
		}
	}
	require.Len(t, lines, 2, "submit and dispatch")
	for _, k := range []string{"task_id", "version", "from", "to", "executor", "trace_id"} {
		assert.Contains(t, lines[0], k)
		assert.Contains(t, lines[1], k)
	}
	assert.Equal(t, float64(id), lines[0]["task_id"])
	assert.Equal(t, "none", lines[0]["from"])
	assert.Equal(t, "pending", lines[0]["to"])
	assert.Equal(t, "pending", lines[1]["from"])
	assert.Equal(t, "dispatched", lines[1]["to"])
	assert.Equal(t, "e1", lines[1]["executor"])
	assert.Equal(t, "tr-1", lines[1]["trace_id"])
}

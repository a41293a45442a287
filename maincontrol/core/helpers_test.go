package core

import (
	"bytes"
	"log/slog"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/wire"
)

// More harness helpers, shared by the scenario, recovery and property tests.

// expectErr pops the next frame for p, checks it is an error with this code
// and returns it.
func (h *harness) expectErr(p PeerID, code wire.Code) *wire.Message {
	h.t.Helper()
	m := h.expect(p, "error")
	require.Equal(h.t, string(code), m.Value("code"), "error frame %s", m)
	return m
}

// drain pops every queued frame for p.
func (h *harness) drain(p PeerID) []*wire.Message {
	fs := h.fx.frames[p]
	h.fx.frames[p] = nil
	return fs
}

// types lists the types of the queued frames for p, without popping them.
func (h *harness) types(p PeerID) []string {
	var ts []string
	for _, m := range h.fx.frames[p] {
		ts = append(ts, m.Type())
	}
	return ts
}

// task pops a task frame for p and returns its token.
func (h *harness) task(p PeerID) (uint64, uint64) {
	h.t.Helper()
	m := h.expect(p, "task")
	return tokenOf(h.t, m)
}

func tokenOf(t testing.TB, m *wire.Message) (uint64, uint64) {
	t.Helper()
	id, err := m.Uint("task_id")
	require.NoError(t, err)
	ver, err := m.Uint("version")
	require.NoError(t, err)
	return id, ver
}

func itoa[T ~uint64 | ~uint32 | ~int](v T) string { return strconv.FormatUint(uint64(v), 10) }

// start sends started for (id, ver).
func (h *harness) start(p PeerID, id uint64, ver uint64) {
	h.t.Helper()
	h.send(p, "started", "task_id", itoa(id), "version", itoa(ver))
}

// result sends a result for (id, ver) and returns its result_ack, which
// must be the first frame for p after it (a task frame dispatched on the
// freed slot may follow it).
func (h *harness) result(p PeerID, id uint64, ver uint64, status string, kv ...string) *wire.Message {
	h.t.Helper()
	h.send(p, "result", append([]string{"task_id", itoa(id), "version", itoa(ver), "status", status}, kv...)...)
	ack := h.expect(p, "result_ack")
	require.Equal(h.t, itoa(id), ack.Value("task_id"))
	require.Equal(h.t, itoa(ver), ack.Value("version"))
	return ack
}

// accepted sends a result that must be accepted.
func (h *harness) accepted(p PeerID, id uint64, ver uint64, status string, kv ...string) {
	h.t.Helper()
	ack := h.result(p, id, ver, status, kv...)
	require.Equal(h.t, "true", ack.Value("accepted"), "ack %s", ack)
	require.False(h.t, ack.Has("reason"))
}

// refused sends a result that must be refused with reason.
func (h *harness) refused(p PeerID, id uint64, ver uint64, reason wire.Reason, status string, kv ...string) {
	h.t.Helper()
	ack := h.result(p, id, ver, status, kv...)
	require.Equal(h.t, "false", ack.Value("accepted"), "ack %s", ack)
	require.Equal(h.t, string(reason), ack.Value("reason"), "ack %s", ack)
}

// query returns the task_state of id.
func (h *harness) query(p PeerID, id uint64) *wire.Message {
	h.t.Helper()
	h.send(p, "query", "req", "q", "task_id", itoa(id))
	m := h.expect(p, "task_state")
	require.Equal(h.t, "q", m.Value("req"))
	return m
}

// heartbeat sends a heartbeat with this running list and pops its pong.
func (h *harness) heartbeat(p PeerID, running string) {
	h.t.Helper()
	h.send(p, "heartbeat", "seq", "1", "running", running)
	h.expect(p, "pong")
}

// task0 is the stored task, for inspection.
func (h *harness) get(id uint64) *task {
	h.t.Helper()
	t := h.c.tasks.get(id)
	require.NotNil(h.t, t, "task %d", id)
	return t
}

// checkReplay requires the records so far to rebuild the live state.
func (h *harness) checkReplay() {
	h.t.Helper()
	require.Equal(h.t, dump(h.c), dump(h.replayed()))
}

// snapshotEntries freezes the core and writes the snapshot into a slice.
func snapshotEntries(t testing.TB, c *Core) [][]byte {
	t.Helper()
	var entries [][]byte
	require.NoError(t, c.Freeze().WriteTo(func(p []byte) error {
		entries = append(entries, bytes.Clone(p))
		return nil
	}))
	return entries
}

// loaded builds a fresh core from snapshot entries and then log records.
func (h *harness) loaded(entries, records [][]byte) *Core {
	h.t.Helper()
	c, err := New(h.cfg, newRecorder())
	require.NoError(h.t, err)
	for i, e := range entries {
		require.NoError(h.t, c.LoadEntry(e), "entry %d", i)
	}
	for i, r := range records {
		require.NoError(h.t, c.ReplayRecord(r), "record %d", i)
	}
	return c
}

// restart simulates a crash and restart: a snapshot taken after the first
// snapAt records (or none when snapAt < 0) plus the log after it load into
// a fresh core, which then takes over with a new recorder (the old records
// kept, so replayed still rebuilds from the start), no peers and
// Recovered called.
func (h *harness) restart() {
	h.t.Helper()
	fx := newRecorder()
	fx.records = h.fx.records
	c, err := New(h.cfg, fx)
	require.NoError(h.t, err)
	for i, r := range h.fx.records {
		require.NoError(h.t, c.ReplayRecord(r), "record %d", i)
	}
	c.Recovered()
	require.NoError(h.t, c.BeginEpoch(0)) // as the server does before serving
	h.c, h.fx = c, fx
}

// restartFrom restarts from a snapshot (entries) taken when the log held
// snapRecords records, plus the records after it.
func (h *harness) restartFrom(entries [][]byte, snapRecords int) {
	h.t.Helper()
	fx := newRecorder()
	fx.records = h.fx.records
	c, err := New(h.cfg, fx)
	require.NoError(h.t, err)
	for i, e := range entries {
		require.NoError(h.t, c.LoadEntry(e), "entry %d", i)
	}
	for i, r := range h.fx.records[snapRecords:] {
		require.NoError(h.t, c.ReplayRecord(r), "record %d", snapRecords+i)
	}
	c.Recovered()
	require.NoError(h.t, c.BeginEpoch(0)) // as the server does before serving
	h.c, h.fx = c, fx
}

// withLog sends the core's log (debug level) to buf.
func withLog(buf *syncbuf.Buffer) func(*Config) {
	return func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
}

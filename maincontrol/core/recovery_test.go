package core

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Restart and recovery: snapshots, log replay and spec section 7's rules
// for the dispatches that were out when the main control stopped.

// richState fills h with tasks in every state and with every index in use:
// priorities, a delay, dependencies, keys, outputs, errors, shared state,
// armed and waiting retries, a task taken back to pending, two executors.
func richState(t *testing.T, h *harness) (cl, e1, e2 PeerID) {
	t.Helper()
	cl = h.client()
	e1 = h.executor("e1", "x,y", 3)
	e2 = h.executor("e2", "x", 2)
	h.submit(cl, "task_type", "z", "priority", "4", "arg.a", "1", "key", "kz") // 1 pending
	h.submit(cl, "task_type", "z", "priority", "7")                            // 2 pending
	h.submit(cl, "task_type", "z", "delay_ms", "60000", "trace_id", "tr")      // 3 pending, delayed
	h.submit(cl, "task_type", "z", "depends_on", "1,2")                        // 4 waiting
	h.submit(cl, "task_type", "x", "timeout_ms", "30000", "key", "kx")         // 5 -> e1 running
	h.submit(cl, "task_type", "x")                                             // 6 -> e2 dispatched
	h.submit(cl, "task_type", "y")                                             // 7 -> e1 succeeded
	h.submit(cl, "task_type", "x", "max_attempts", "1")                        // 8 -> e2 failed
	h.submit(cl, "task_type", "x")                                             // 9 -> e1 retrying, armed
	h.submit(cl, "task_type", "z", "wait", "true")                             // 10 cancelled
	for _, p := range []PeerID{e1, e2, e1, e2, e1} {
		h.task(p)
	}
	h.start(e1, 5, 1)
	h.start(e1, 7, 1)
	h.start(e2, 8, 1)
	h.start(e1, 9, 1)
	h.accepted(e1, 7, 1, "succeeded", "out.r", "seven", "state.set.s", "x", "state.add.n", "7")
	h.accepted(e2, 8, 1, "failed", "error", "bad", "out.o", "1")
	h.accepted(e1, 9, 1, "failed", "error", "again")
	h.send(cl, "cancel", "req", "c", "task_id", "10")
	require.Equal(t, []string{"done", "cancelled"}, h.types(cl))
	h.drain(cl)
	// 11: retrying, waiting behind the retry cap (MaxRetrying=1).
	h.submit(cl, "task_type", "y")
	id, v := h.task(e1)
	require.Equal(t, uint64(11), id)
	h.start(e1, id, v)
	h.accepted(e1, id, v, "failed")
	// 12: taken back to pending by the start timeout of e2's dispatch (e2
	// does not take x tasks any more, so it stays pending).
	h.submit(cl, "task_type", "x", "priority", "9")
	h.task(e1)
	h.advance(time.Millisecond)
	require.Equal(t, Retrying, h.state(9))
	require.Equal(t, Retrying, h.state(11))
	require.NotZero(t, h.get(9).flags&flagArmed)
	require.Zero(t, h.get(11).flags&flagArmed)
	require.Equal(t, Dispatched, h.state(12))
	return cl, e1, e2
}

func TestCore_SnapshotRoundTrip(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRetrying = 1 })
	cl, e1, _ := richState(t, h)
	entries := snapshotEntries(t, h.c)
	n := len(h.fx.records)
	assert.Equal(t, dump(h.c), dump(h.loaded(entries, nil)), "snapshot alone")

	// More changes after the snapshot: snapshot + the log after it.
	h.advance(DefaultStartTimeout) // 6 and 12 taken back
	h.drain(e1)
	h.submit(cl, "task_type", "x", "key", "k13")
	h.drain(e1)
	h.start(e1, 5, 1)
	h.accepted(e1, 5, 1, "succeeded", "state.add.n", "1")
	h.advance(time.Minute) // the delay of 3 ends, 9's backoff ends, 11 is armed, e2 lost
	h.checkReplay()
	assert.Equal(t, dump(h.c), dump(h.loaded(entries, h.fx.records[n:])))

	// A second snapshot on top.
	entries2 := snapshotEntries(t, h.c)
	n2 := len(h.fx.records)
	h.send(cl, "cancel", "req", "c", "task_id", "1")
	h.expect(cl, "cancelled")
	h.advance(time.Second)
	assert.Equal(t, dump(h.c), dump(h.loaded(entries2, h.fx.records[n2:])))
	assert.Equal(t, dump(h.c), dump(h.loaded(entries, h.fx.records[n:])))
}

// A frozen snapshot is not affected by the changes made before it is
// written: copy-on-write chunks and shared-state map.
func TestCore_FreezeIsolation(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRetrying = 1; c.RetentionMax = 3 })
	cl, e1, _ := richState(t, h)
	snap := h.c.Freeze()
	at := dump(h.c)
	assert.Equal(t, 12, snap.Tasks())
	// Change every kind of thing: states, outputs, shared state, drops,
	// executors, new tasks.
	for range 1200 { // more than one chunk of new tasks
		h.submit(cl, "task_type", "q")
	}
	h.start(e1, 5, 1)
	h.accepted(e1, 5, 1, "succeeded", "state.set.s", "changed", "state.add.n", "100", "state.set.new", "1")
	for id := 1; id <= 4; id++ {
		h.send(cl, "cancel", "req", "c", "task_id", itoa(id))
	}
	h.advance(time.Minute)
	h.executor("e3", "q", 5)
	require.NotEqual(t, at, dump(h.c))
	var entries [][]byte
	require.NoError(t, snap.WriteTo(func(p []byte) error {
		entries = append(entries, append([]byte(nil), p...))
		return nil
	}))
	assert.Equal(t, at, dump(h.loaded(entries, nil)))
	assert.Equal(t, 12, snap.Tasks())

	// A sink error stops WriteTo.
	boom := errors.New("disk full")
	calls := 0
	err := snap.WriteTo(func([]byte) error {
		calls++
		if calls == 5 {
			return boom
		}
		return nil
	})
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, 5, calls)
}

// restartedWith builds the common restart scenario: e1 holds 1 (running,
// timeout 10 s), 2 (dispatched) and 3 (running); then the main control
// restarts.
func restartedWith(t *testing.T, mods ...func(*Config)) *harness {
	h := newHarness(t, mods...)
	cl := h.client()
	ex := h.executor("e1", "x", 3)
	h.submit(cl, "task_type", "x", "timeout_ms", "10000")
	h.submit(cl, "task_type", "x")
	h.submit(cl, "task_type", "x")
	for range 3 {
		h.task(ex)
	}
	h.start(ex, 1, 1)
	h.start(ex, 3, 1)
	h.heartbeat(ex, "1.1,2.1,3.1")
	require.Equal(t, Running, h.state(2), "listed: started")
	h.advance(4 * time.Second)
	h.heartbeat(ex, "1.1,2.1,3.1")
	h.advance(4 * time.Second) // 1's deadline is 2 s away
	h.restart()
	return h
}

func TestCore_RecoveredListing(t *testing.T) {
	h := restartedWith(t)
	for id := uint64(1); id <= 3; id++ {
		require.Equal(t, Running, h.state(id))
	}
	ex := h.executor("e1", "x", 3)
	// The old deadline of 1 passes while it waits to be listed: nothing.
	h.advance(3 * time.Second)
	assert.Equal(t, Running, h.state(1))
	h.none(ex)
	// Two empty lists: restored tasks are not subject to the two-lists
	// rule until listed.
	h.heartbeat(ex, "")
	h.heartbeat(ex, "")
	for id := uint64(1); id <= 3; id++ {
		assert.Equal(t, Running, h.state(id))
	}
	h.none(ex)
	// 1 is listed: it continues as running, its timeout starts now.
	h.advance(3 * time.Second)
	h.heartbeat(ex, "1.1")
	listed := h.c.now()
	assert.Equal(t, listed+10000, h.get(1).dueMs)
	// 3 is listed later, still within the heartbeat timeout; 2 never.
	h.advance(2 * time.Second)
	h.heartbeat(ex, "1.1,3.1")
	h.advance(7*time.Second - time.Millisecond) // the restart deadline minus 1 ms
	h.heartbeat(ex, "1.1,3.1")
	assert.Equal(t, Running, h.state(2))
	h.advance(time.Millisecond) // one heartbeat timeout after the restart
	assert.Equal(t, Retrying, h.state(2), "running, not listed: retried")
	assert.Equal(t, Running, h.state(1))
	assert.Equal(t, Running, h.state(3))
	// Now listed, 1 and 3 are subject to the two-lists rule.
	h.heartbeat(ex, "1.1")
	h.heartbeat(ex, "1.1")
	assert.Equal(t, "3", h.expect(ex, "cancel").Value("task_id"))
	assert.Equal(t, Retrying, h.state(3))
	// And 1's timeout runs from its listing.
	h.clock.T = time.UnixMilli(listed + 10000 - 1)
	h.c.Tick()
	assert.Equal(t, Running, h.state(1))
	h.clock.T = time.UnixMilli(listed + 10000)
	h.c.Tick()
	assert.Equal(t, Retrying, h.state(1))
}

func TestCore_RecoveredDispatched(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 3)
	for range 3 {
		h.submit(cl, "task_type", "x")
	}
	for range 3 {
		h.task(ex)
	}
	h.restart()
	ex = h.executor("e1", "x", 3)
	// The start timeout (5 s) does not take restored dispatches back: they
	// wait one heartbeat timeout for a listing.
	h.advance(6 * time.Second)
	h.none(ex)
	for id := uint64(1); id <= 3; id++ {
		require.Equal(t, Dispatched, h.state(id))
	}
	h.heartbeat(ex, "1.1") // listed in running=: it runs
	assert.Equal(t, Running, h.state(1))
	h.start(ex, 2, 1) // a started after the restart counts too
	assert.Equal(t, Running, h.state(2))
	h.advance(9 * time.Second)
	// 3, dispatched and not listed: back to pending, and out again.
	m := h.expect(ex, "task")
	assert.Equal(t, "3", m.Value("task_id"))
	assert.Equal(t, "2", m.Value("version"))
	assert.Equal(t, "1", m.Value("attempt"), "no attempt used")
	h.accepted(ex, 1, 1, "succeeded")
	h.accepted(ex, 2, 1, "succeeded")
	h.checkReplay()
}

func TestCore_RecoveredExecutorNeverReturns(t *testing.T) {
	h := restartedWith(t)
	cl := h.client()
	h.advance(DefaultHeartbeatTimeout - time.Millisecond)
	assert.Contains(t, h.c.execs, "e1")
	h.advance(time.Millisecond)
	assert.NotContains(t, h.c.execs, "e1")
	for id := uint64(1); id <= 3; id++ {
		assert.Equal(t, Retrying, h.state(id), "%d", id)
	}
	h.send(cl, "stats", "req", "s")
	assert.Equal(t, "3", h.expect(cl, "stats").Value("tasks.retrying"))
	h.checkReplay()
}

func TestCore_RecoveredRetryWaitsRestOfDelay(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	id := h.submit(cl, "task_type", "x", "max_attempts", "5")
	for range 4 { // attempt 4 fails: delay in [4 s, 8 s]
		_, v := h.task(ex)
		h.start(ex, id, v)
		h.accepted(ex, id, v, "failed")
		if h.state(id) == Retrying && h.get(id).attempt < 4 {
			h.advance(4 * time.Second)
		}
	}
	due := h.get(id).dueMs
	h.advance(2 * time.Second)
	h.restart()
	ex = h.executor("e1", "x", 1)
	h.clock.T = time.UnixMilli(due - 1)
	h.c.Tick()
	assert.Equal(t, Retrying, h.state(id))
	h.clock.T = time.UnixMilli(due)
	h.c.Tick()
	m := h.expect(ex, "task")
	assert.Equal(t, "5", m.Value("attempt"))
}

func TestCore_RecoveredFromSnapshot(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRetrying = 1 })
	cl, _, _ := richState(t, h)
	_ = cl
	entries := snapshotEntries(t, h.c)
	n := len(h.fx.records)
	before := dump(h.c)
	h.restartFrom(entries, n)
	assert.Equal(t, strings.Replace(before, "next_epoch=0", "next_epoch=1", 1), dump(h.c),
		"Recovered changes no durable state; BeginEpoch takes the next epoch")
	// The dispatches out at the restart: 5 running and 12 dispatched on
	// e1, 6 dispatched on e2. e1 comes back and lists 5; e2 never does.
	e1 := h.executor("e1", "x,y", 3)
	h.heartbeat(e1, "5.1")
	h.advance(DefaultHeartbeatTimeout / 2)
	h.drain(e1) // 9's retry
	h.heartbeat(e1, "5.1")
	h.advance(DefaultHeartbeatTimeout / 2)
	assert.Equal(t, Running, h.state(5))
	assert.NotContains(t, h.c.execs, "e2")
	// 6 and 12 went back to pending, 12 (priority 9) out again to e1.
	assert.Equal(t, Dispatched, h.state(12))
	assert.Equal(t, uint64(2), h.get(12).version)
	assert.Equal(t, "e1", h.get(12).execID)
	assert.Equal(t, uint32(1), h.get(12).attempt)
	assert.Equal(t, Pending, h.state(6))
	assert.Equal(t, uint32(1), h.get(6).attempt)
	// New ids continue; keys are known.
	cl = h.client()
	assert.Equal(t, uint64(13), h.submit(cl, "task_type", "q"))
	h.send(cl, "submit", "req", "k", "task_type", "q", "key", "kx")
	assert.Equal(t, "5", h.expect(cl, "submitted").Value("task_id"))
	h.send(cl, "state_get", "req", "g")
	st := h.expect(cl, "state")
	assert.Equal(t, "7", st.Value("state.n"))
	assert.Equal(t, "1", st.Value("state_version"))
	// The deadline of a restored task set by its listing is live state,
	// not in the log: the only difference replay shows.
	assert.NotEqual(t, dump(h.c), dump(h.replayed()))
	assert.Equal(t, maskDue(dump(h.c), 5), maskDue(dump(h.replayed()), 5))
}

// maskDue hides the due time of the given tasks in a dump.
func maskDue(d string, ids ...uint64) string {
	mask := make(map[string]bool, len(ids))
	for _, id := range ids {
		mask[fmt.Sprintf("task %d ", id)] = true
	}
	lines := strings.Split(d, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "task ") {
			continue
		}
		if sp := strings.IndexByte(l[5:], ' '); sp < 0 || !mask[l[:5+sp+1]] {
			continue
		}
		if at := strings.Index(l, " due="); at >= 0 {
			end := at + 5 + strings.IndexByte(l[at+5:], ' ')
			lines[i] = l[:at] + " due=?" + l[end:]
		}
	}
	return strings.Join(lines, "\n")
}

// TestCore_RecoveredSettlesWaiting crashes a core just after a task's end
// record, before the records that release or cancel its dependents (they
// are separate records: the log can keep the first and lose the rest, and a
// cut torn tail can too). Recovery moves those dependents on, with records
// of their own; before, they stayed waiting for good.
func TestCore_RecoveredSettlesWaiting(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	head := h.submit(cl, "task_type", "x")
	var released []uint64
	for range 3 {
		released = append(released, h.submit(cl, "task_type", "y", "depends_on", itoa(head)))
	}
	cancelHead := h.submit(cl, "task_type", "z", "delay_ms", "600000")
	chain := []uint64{cancelHead}
	for range 3 {
		chain = append(chain, h.submit(cl, "task_type", "z", "depends_on", itoa(chain[len(chain)-1])))
	}
	mixed := h.submit(cl, "task_type", "y", "depends_on", itoa(chain[1])+","+itoa(cancelHead))

	id, ver := h.task(ex)
	require.Equal(t, head, id)
	h.start(ex, id, ver)
	h.accepted(ex, id, ver, "succeeded")
	h.send(cl, "cancel", "req", "c", "task_id", itoa(cancelHead))
	require.Equal(t, Cancelled, h.state(chain[len(chain)-1]), "the cascade ran live")
	cut := endRecordOf(t, h.fx.records, cancelHead)

	// The log as a crash can leave it: both ends, none of what followed
	// them (the releases came between the two).
	kept := slices.DeleteFunc(slices.Clone(h.fx.records[:cut+1]), func(p []byte) bool {
		var r record
		require.NoError(t, decodeRecord(p, &r))
		return r.kind == recReady
	})
	fx := newRecorder()
	c, err := New(h.cfg, fx)
	require.NoError(t, err)
	for i, p := range kept {
		require.NoError(t, c.ReplayRecord(p), "record %d", i)
	}
	for _, id := range released {
		require.Equal(t, Waiting, c.tasks.get(id).state, "the crash lost the release of %d", id)
	}
	c.Recovered()

	for _, id := range released {
		assert.Equal(t, Pending, c.tasks.get(id).state, "task %d: its dependency succeeded", id)
	}
	for i, id := range chain[1:] {
		task := c.tasks.get(id)
		assert.Equal(t, Cancelled, task.state, "chain task %d", id)
		assert.Equal(t, "dependency "+itoa(chain[i])+" cancelled", task.errText())
	}
	assert.Equal(t, Cancelled, c.tasks.get(mixed).state, "one dependency cancelled, one still waiting")
	assert.Contains(t, []string{"dependency " + itoa(cancelHead) + " cancelled", "dependency " + itoa(chain[1]) + " cancelled"},
		c.tasks.get(mixed).errText(), "either cancelled dependency may be named")
	assert.Zero(t, c.counts[Waiting])

	// What recovery did is logged: replaying the kept records and the new
	// ones gives the same state, with nothing left to settle.
	again, err := New(h.cfg, newRecorder())
	require.NoError(t, err)
	for i, p := range slices.Concat(kept, fx.records) {
		require.NoError(t, again.ReplayRecord(p), "record %d", i)
	}
	assert.Equal(t, dump(c), dump(again))
	assert.NotEmpty(t, fx.records)
}

// endRecordOf returns the index of the record that ended task id.
func endRecordOf(t *testing.T, records [][]byte, id uint64) int {
	t.Helper()
	for i, p := range records {
		var r record
		require.NoError(t, decodeRecord(p, &r))
		if r.kind == recEnd && r.id == id {
			return i
		}
	}
	t.Fatalf("no end record for task %d", id)
	return -1
}

// A core restarted with a smaller MaxFrame than its tasks were accepted
// under refuses to serve them: it would send frames larger than the
// max_frame it announces.
func TestCore_CheckFrames(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	big := strings.Repeat("p", 200_000)
	h.submit(cl, "task_type", "y", "arg.p", big) // pending: its task frame
	id := h.submit(cl, "task_type", "x")
	_, ver := h.task(ex)
	h.start(ex, id, ver)
	h.accepted(ex, id, ver, "succeeded", "out.x", big) // ended: its task_state
	require.NoError(t, h.c.CheckFrames())

	for _, tc := range []struct {
		maxFrame int
		ok       bool
	}{{1 << 20, true}, {65536, false}, {200_100, false}, {201_000, true}} {
		cfg := h.cfg
		cfg.MaxFrame = tc.maxFrame
		c, err := New(cfg, newRecorder())
		require.NoError(t, err)
		for i, p := range h.fx.records {
			require.NoError(t, c.ReplayRecord(p), "record %d", i)
		}
		err = c.CheckFrames()
		if tc.ok {
			assert.NoError(t, err, "max frame %d", tc.maxFrame)
			continue
		}
		require.ErrorIs(t, err, ErrFrameTooSmall, "max frame %d", tc.maxFrame)
		assert.Contains(t, err.Error(), "start with --max-frame 200")
	}
}

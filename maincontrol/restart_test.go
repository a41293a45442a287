package maincontrol_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/wire"
)

// Persistence through the server (spec section 7): confirmed changes
// survive a graceful restart, task ids are never reused, dispatches are
// restored.

func TestRestart_ConfirmedChangesSurvive(t *testing.T) {
	t.Parallel()
	for _, every := range []int{1, 100} {
		t.Run("snapshot every "+strconv.Itoa(every), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cfg := maincontrol.Config{DataDir: dir, SnapshotEvery: every}
			addr, stop := runUntil(t, cfg)
			cl := clientPeer(t, addr)
			ex := executorPeer(t, addr, "e1", "t", 1)

			a := cl.submit("a", "task_type", "t", "trace_id", "tr-a")
			task := ex.expectTask(a)
			ex.start(task)
			ex.finish(task, "status", "succeeded", "out.x", "1", "state.set.k", "v=w", "state.add.n", "3")
			b := cl.submit("b", "task_type", "t")
			task = ex.expectTask(b)
			ex.start(task)
			ex.finish(task, "status", "failed", "retryable", "false", "error", "bad", "out.y", "2")
			c := cl.submit("c", "task_type", "none")
			cl.request("cancel", "req", "c", "task_id", u(c))
			d := cl.submit("d", "task_type", "later", "key", "kd", "priority", "5", "arg.z", "x=y\n", "max_attempts", "7")
			e := cl.submit("e", "task_type", "later", "depends_on", u(d))
			f := cl.submit("f", "task_type", "later", "delay_ms", "600000")
			want := map[uint64]*wire.Message{}
			for _, id := range []uint64{a, b, c, d, e, f} {
				want[id] = cl.query(id)
			}
			stats := cl.request("stats", "req", "s")
			stop()

			check := func(cl *rawPeer) {
				t.Helper()
				for id, before := range want {
					after := cl.query(id)
					assert.Equal(t, before.Fields, after.Fields, "task %d", id)
				}
				after := cl.request("stats", "req", "s")
				for _, k := range []string{"tasks.pending", "tasks.waiting", "tasks.succeeded", "tasks.failed",
					"tasks.cancelled", "state_version"} {
					assert.Equal(t, stats.Value(k), after.Value(k), k)
				}
				m := cl.request("state_get", "req", "g")
				assert.Equal(t, "v=w", m.Value("state.k"))
				assert.Equal(t, "3", m.Value("state.n"))
				assert.Equal(t, "1", m.Value("state_version"))
				dup := cl.request("submit", "req", "dup", "task_type", "later", "key", "kd")
				assert.Equal(t, "true", dup.Value("duplicate"))
				assert.Equal(t, u(d), dup.Value("task_id"))
			}
			addr, stop = runUntil(t, maincontrol.Config{DataDir: dir, SnapshotEvery: every})
			cl = clientPeer(t, addr)
			check(cl)
			g := cl.submit("g", "task_type", "none")
			assert.Equal(t, f+1, g, "the next id follows the last confirmed one")
			want[g] = cl.query(g)

			// The restored queue still works: d, then e once d succeeded.
			ex = executorPeer(t, addr, "e9", "later", 1)
			task = ex.expectTask(d)
			assert.Equal(t, "x=y\n", task.Value("arg.z"))
			assert.Equal(t, "7", task.Value("max_attempts"))
			ex.start(task)
			ex.finish(task, "status", "succeeded")
			task = ex.expectTask(e)
			ex.start(task)
			ex.finish(task, "status", "succeeded")
			for _, id := range []uint64{d, e} {
				want[id] = cl.query(id)
			}
			stats = cl.request("stats", "req", "s")
			stop()

			addr, _ = runUntil(t, maincontrol.Config{DataDir: dir, SnapshotEvery: every})
			cl = clientPeer(t, addr)
			check(cl)
			assert.Equal(t, g+1, cl.submit("h", "task_type", "none"))
		})
	}
}

func TestRestart_IDsNeverReused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := maincontrol.Config{DataDir: dir, Core: core.Config{Retention: 50 * time.Millisecond}}
	addr, stop := runUntil(t, cfg)
	cl := clientPeer(t, addr)
	for i := 1; i <= 3; i++ {
		id := cl.submit("s", "task_type", "t", "key", "k"+strconv.Itoa(i))
		require.Equal(t, uint64(i), id)
		cl.request("cancel", "req", "c", "task_id", u(id))
	}
	// Past retention every task is dropped: its id is unknown, its key free.
	deadline := time.Now().Add(5 * time.Second)
	for {
		m := cl.request("query", "req", "q", "task_id", "3")
		if m.Type() == "error" {
			assert.Equal(t, string(wire.CodeUnknownTask), m.Value("code"))
			break
		}
		require.True(t, time.Now().Before(deadline), "task 3 not dropped: %s", m)
		time.Sleep(20 * time.Millisecond)
	}
	stop()

	addr, stop = runUntil(t, cfg)
	cl = clientPeer(t, addr)
	cl.send("query", "req", "q", "task_id", "1")
	cl.expectError(wire.CodeUnknownTask, "q")
	m := cl.request("submit", "req", "k1", "task_type", "t", "key", "k1")
	assert.Equal(t, "4", m.Value("task_id"), "ids are never reused, even of dropped tasks")
	assert.False(t, m.Has("duplicate"), "a dropped task's key may be used again")
	stop()

	addr, _ = runUntil(t, cfg)
	cl = clientPeer(t, addr)
	assert.Equal(t, uint64(5), cl.submit("s", "task_type", "t"))
}

func TestRestart_DispatchesRestored(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr, stop := runUntil(t, maincontrol.Config{DataDir: dir})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 2)
	running := cl.submit("a", "task_type", "t")
	dispatched := cl.submit("b", "task_type", "t")
	got := tasksByID(ex, 2)
	ta, tb := got[u(running)], got[u(dispatched)]
	ex.start(ta)
	cl.waitState(running, "running", 5*time.Second)
	stop()

	addr, _ = runUntil(t, maincontrol.Config{DataDir: dir, Core: shortTimeouts()})
	cl = clientPeer(t, addr)
	assert.Equal(t, "running", cl.stateOf(running))
	assert.Equal(t, "dispatched", cl.stateOf(dispatched))
	ex = executorPeer(t, addr, "e1", "t", 2)
	token := u(running) + "." + ta.Value("version")
	// List only the running one; the dispatched one goes back to pending
	// after timeout_ms and comes again with the same attempt, as the first
	// version of the second epoch (2^32+1).
	var again *wire.Message
	deadline := time.Now().Add(5 * time.Second)
	for seq := 1; again == nil; seq++ {
		require.True(t, time.Now().Before(deadline), "the unlisted dispatch did not come back")
		ex.send("heartbeat", "seq", strconv.Itoa(seq), "running", token)
		for {
			m := ex.recv()
			if m.Type() == "pong" {
				break
			}
			if m.Type() == "task" {
				again = m
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	assert.Equal(t, u(dispatched), again.Value("task_id"))
	assert.Equal(t, "4294967297", again.Value("version"))
	assert.Equal(t, tb.Value("attempt"), again.Value("attempt"))
	assert.Equal(t, "running", cl.stateOf(running), "the listed one continues")
	assert.Equal(t, "true", ex.finish(ta, "status", "succeeded").Value("accepted"))
	ex.start(again)
	assert.Equal(t, "true", ex.finish(again, "status", "succeeded").Value("accepted"))
}

// A graceful stop under a stream of pipelined submits: every submitted the
// client got names a task that exists after the restart, and no id is given
// twice.
func TestRestart_StopUnderLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr, stop := runUntil(t, maincontrol.Config{DataDir: dir})
	cl := clientPeer(t, addr)
	const n = 20000
	var buf []byte
	for i := 0; i < n; i++ {
		buf = append(buf, mustFrame(t, "submit", "req", strconv.Itoa(i), "task_type", "t")...)
	}
	go func() { _, _ = cl.c.Write(buf) }() // fails once the server closes
	confirmed := make(chan []string, 1)
	started := make(chan struct{})
	go func() {
		var ids []string
		_ = cl.c.SetReadDeadline(time.Now().Add(30 * time.Second))
		for {
			m, err := cl.r.ReadMessage()
			if err != nil {
				confirmed <- ids
				return
			}
			if m.Type() == "submitted" {
				ids = append(ids, m.Value("task_id"))
				if len(ids) == 1000 {
					close(started)
				}
			}
		}
	}()
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("no submits confirmed")
	}
	stop()
	ids := <-confirmed
	t.Logf("%d of %d submits confirmed before the stop", len(ids), n)

	addr, _ = runUntil(t, maincontrol.Config{DataDir: dir})
	cl = clientPeer(t, addr)
	seen := map[string]bool{}
	maxID := uint64(0)
	for _, id := range ids {
		require.False(t, seen[id], "id %s confirmed twice", id)
		seen[id] = true
		n, _ := strconv.ParseUint(id, 10, 64)
		maxID = max(maxID, n)
	}
	// Every confirmed task survived; list them all by pages.
	found := map[string]bool{}
	after := "0"
	for {
		m := cl.request("list", "req", "l", "state", "pending", "limit", "1000", "after", after)
		require.Equal(t, "tasks", m.Type())
		if m.Value("ids") != "" {
			for _, id := range strings.Split(m.Value("ids"), ",") {
				found[id] = true
			}
		}
		next, ok := m.Get("next")
		if !ok {
			break
		}
		after = next
	}
	for _, id := range ids {
		assert.True(t, found[id], "confirmed task %s lost in a graceful stop", id)
	}
	assert.Greater(t, cl.submit("new", "task_type", "t"), maxID, "ids are never reused")
}

// Restored dispatches whose executor never comes back: after timeout_ms
// the dispatched one goes back to pending, the running one to retrying.
func TestRestart_DispatchesOfAnAbsentExecutor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr, stop := runUntil(t, maincontrol.Config{DataDir: dir})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 2)
	running := cl.submit("a", "task_type", "t")
	dispatched := cl.submit("b", "task_type", "t")
	got := tasksByID(ex, 2)
	ex.start(got[u(running)])
	cl.waitState(running, "running", 5*time.Second)
	stop()

	cfg := shortTimeouts()
	cfg.RetryBase = 10 * time.Second
	addr, _ = runUntil(t, maincontrol.Config{DataDir: dir, Core: cfg})
	cl = clientPeer(t, addr)
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, "running", cl.stateOf(running), "waits one timeout_ms for its executor")
	assert.Equal(t, "dispatched", cl.stateOf(dispatched))
	st := cl.waitState(running, "retrying", 5*time.Second)
	assert.Equal(t, "1", st.Value("attempt"))
	st = cl.waitState(dispatched, "pending", 5*time.Second)
	assert.Equal(t, "1", st.Value("attempt"))
}

// A retrying task waits out the rest of its delay after a restart.
func TestRestart_RetryingWaitsOutItsDelay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := maincontrol.Config{DataDir: dir, Core: core.Config{RetryBase: 3 * time.Second}}
	addr, stop := runUntil(t, cfg)
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 1)
	id := cl.submit("a", "task_type", "t")
	task := ex.expectTask(id)
	ex.start(task)
	failedAt := time.Now()
	ex.finish(task, "status", "failed", "error", "try again")
	stop()

	addr, _ = runUntil(t, cfg)
	cl = clientPeer(t, addr)
	st := cl.query(id)
	assert.Equal(t, "retrying", st.Value("state"))
	assert.Equal(t, "try again", st.Value("error"))
	ex = executorPeer(t, addr, "e1", "t", 1)
	require.NoError(t, ex.c.SetReadDeadline(time.Now().Add(10*time.Second)))
	m, err := ex.r.ReadMessage()
	require.NoError(t, err)
	require.Equal(t, "task", m.Type())
	waited := time.Since(failedAt)
	assert.Equal(t, "2", m.Value("attempt"))
	assert.GreaterOrEqual(t, waited, 1400*time.Millisecond, "the delay (1.5 to 3 s) was not waited out")
	assert.Less(t, waited, 4500*time.Millisecond, "retried far later than its delay")
}

package core

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/wire"
)

// Tests of protocol section 8.3 (requeue).

// failTask runs task id on executor ex to a final failure and returns
// the version that failed.
func (h *harness) failTask(ex PeerID, id uint64, errText string) uint64 {
	h.t.Helper()
	tid, ver := h.task(ex)
	require.Equal(h.t, id, tid)
	h.start(ex, id, ver)
	h.accepted(ex, id, ver, "failed", "retryable", "false", "error", errText)
	require.Equal(h.t, Failed, h.state(id))
	return ver
}

// requeue sends a requeue and returns its reply (requeued or error).
func (h *harness) requeue(p PeerID, id uint64, kv ...string) *wire.Message {
	h.t.Helper()
	h.send(p, "requeue", append([]string{"req", "rq", "task_id", itoa(id)}, kv...)...)
	fs := h.fx.frames[p]
	require.NotEmpty(h.t, fs)
	m := fs[0]
	h.fx.frames[p] = fs[1:]
	require.Equal(h.t, "rq", m.Value("req"), "%s", m)
	return m
}

func TestRequeue_FailedRunsAgain(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	id := h.submit(cl, "task_type", "x", "max_attempts", "2")
	ex := h.executor("e1", "x", 1)
	failed := h.failTask(ex, id, "boom")
	h.c.Closed(ex) // no slot free: the requeued task stays pending

	m := h.requeue(cl, id, "reason", "fixed the disk")
	require.Equal(t, "requeued", m.Type(), "%s", m)
	assert.Equal(t, "pending", m.Value("state"))
	ver, err := m.Uint("version")
	require.NoError(t, err)
	assert.Greater(t, ver, failed, "a new version")

	q := h.query(cl, id)
	assert.Equal(t, "pending", q.Value("state"))
	assert.Equal(t, "0", q.Value("attempt"), "attempts reset")
	assert.Equal(t, "1", q.Value("requeues"))
	assert.Equal(t, "fixed the disk", q.Value("requeue_reason"))
	assert.Equal(t, "boom", q.Value("error"), "the end's error stays until the next dispatch")

	// The old version's late result is stale; the new dispatch runs as
	// attempt 1, above the requeue's version.
	ex = h.executor("e1", "x", 1)
	tid, v2 := h.task(ex)
	require.Equal(t, id, tid)
	assert.Greater(t, v2, ver)
	h.refused(ex, id, failed, wire.ReasonStale, "succeeded")
	h.start(ex, id, v2)
	h.accepted(ex, id, v2, "succeeded")
	q = h.query(cl, id)
	assert.Equal(t, "succeeded", q.Value("state"))
	assert.Equal(t, "1", q.Value("attempt"))
	assert.False(t, q.Has("error"))
	assert.Equal(t, 1, h.fx.waits["requeued"][WaitConfirm], "requeued waits for its record")
	h.checkReplay()
}

func TestRequeue_KeepAttempts(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	id := h.submit(cl, "task_type", "x", "max_attempts", "1")
	ex := h.executor("e1", "x", 1)
	h.failTask(ex, id, "boom")
	require.Equal(t, "requeued", h.requeue(cl, id, "keep_attempts", "true").Type())
	assert.False(t, h.query(cl, id).Has("requeue_reason"), "no reason given")
	m := h.expect(ex, "task")
	assert.Equal(t, "2", m.Value("attempt"), "the attempt after the last, past max_attempts")
	id2, v := tokenOf(t, m)
	h.start(ex, id2, v)
	h.accepted(ex, id2, v, "failed", "error", "again") // retryable, but no attempt left
	assert.Equal(t, Failed, h.state(id))
	h.checkReplay()
}

func TestRequeue_Refusals(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	pending := h.submit(cl, "task_type", "x")
	m := h.requeue(cl, pending)
	assert.Equal(t, string(wire.CodeIllegalTransition), m.Value("code"), "%s", m)
	assert.Equal(t, Pending, h.state(pending), "unchanged")

	ex := h.executor("e1", "x", 1)
	tid, v := h.task(ex)
	h.start(ex, tid, v)
	h.accepted(ex, tid, v, "succeeded")
	m = h.requeue(cl, pending)
	assert.Equal(t, string(wire.CodeIllegalTransition), m.Value("code"), "a succeeded task: %s", m)

	m = h.requeue(cl, 999)
	assert.Equal(t, string(wire.CodeUnknownTask), m.Value("code"))

	c2 := h.submit(cl, "task_type", "x", "delay_ms", "60000")
	h.send(cl, "cancel", "req", "c", "task_id", itoa(c2))
	h.expect(cl, "cancelled")
	m = h.requeue(cl, c2, "reason", strings.Repeat("r", maxReasonLen+1))
	assert.Equal(t, string(wire.CodeBadRequest), m.Value("code"))
	m = h.requeue(cl, c2, "keep_attempts", "yes")
	assert.Equal(t, string(wire.CodeBadRequest), m.Value("code"))
	assert.Equal(t, Cancelled, h.state(c2))
	m = h.requeue(cl, c2, "reason", strings.Repeat("r", maxReasonLen))
	assert.Equal(t, "requeued", m.Type(), "a cancelled task: %s", m)
	// Its old delay timer (same id, old version) must not fire as its own.
	h.checkReplay()
}

func TestRequeue_NeedsAdminProof(t *testing.T) {
	admin := []byte("admin-secret")
	h := newHarness(t, func(c *Config) { c.AdminToken = admin })
	cl := h.client()
	id := h.submit(cl, "task_type", "x")
	h.send(cl, "cancel", "req", "c", "task_id", itoa(id))
	h.expect(cl, "cancelled")
	m := h.requeue(cl, id)
	assert.Equal(t, string(wire.CodeNotPermitted), m.Value("code"))
	assert.False(t, h.fx.closed[cl])
	for _, typ := range []string{"requeue_where", "cancel_where", "purge_where"} {
		h.send(cl, typ, "req", "b", "state", "")
		assert.Equal(t, string(wire.CodeNotPermitted), h.expectErr(cl, wire.CodeNotPermitted).Value("code"), typ)
	}
	assert.Equal(t, Cancelled, h.state(id))

	adm := h.open()
	h.send(adm, "hello", "req", "h", "admin_auth", auth.Sign(admin, testNonce))
	h.expect(adm, "hello_ok")
	assert.Equal(t, "requeued", h.requeue(adm, id).Type())
}

func TestRequeue_QueueFull(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPending = 1 })
	cl := h.client()
	id := h.submit(cl, "task_type", "x")
	h.send(cl, "cancel", "req", "c", "task_id", itoa(id))
	h.expect(cl, "cancelled")
	h.submit(cl, "task_type", "x")
	m := h.requeue(cl, id)
	assert.Equal(t, string(wire.CodeQueueFull), m.Value("code"))
	assert.Equal(t, Cancelled, h.state(id))
}

// A dependency that failed blocks the requeue; one not ended makes the
// requeued task wait, released when it succeeds.
func TestRequeue_Dependencies(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	a := h.submit(cl, "task_type", "x")
	b := h.submit(cl, "task_type", "y", "depends_on", itoa(a))
	ex := h.executor("e1", "x", 1)
	h.failTask(ex, a, "boom")
	require.Equal(t, Cancelled, h.state(b), "cancelled by its dependency")

	m := h.requeue(cl, b)
	assert.Equal(t, string(wire.CodeIllegalTransition), m.Value("code"))
	assert.Contains(t, m.Value("message"), "dependency "+itoa(a))

	require.Equal(t, "requeued", h.requeue(cl, a).Type())
	m = h.requeue(cl, b)
	require.Equal(t, "requeued", m.Type(), "%s", m)
	assert.Equal(t, "waiting", m.Value("state"))
	h.checkReplay()

	ey := h.executor("e2", "y", 1)
	tid, v := h.task(ex)
	h.start(ex, tid, v)
	h.accepted(ex, tid, v, "succeeded")
	assert.NotEqual(t, Waiting, h.state(b), "released when its dependency succeeded")
	tid, _ = h.task(ey)
	assert.Equal(t, b, tid)
	h.checkReplay()
}

// A task cancelled while it waited, whose dependency has been forgotten
// since, cannot be requeued: nobody can tell how the dependency ended.
func TestRequeue_ForgottenDependency(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	a := h.submit(cl, "task_type", "x")
	b := h.submit(cl, "task_type", "y", "depends_on", itoa(a))
	c := h.submit(cl, "task_type", "y", "depends_on", itoa(a))
	ex := h.executor("e1", "x", 1)
	tid, v := h.task(ex)
	h.start(ex, tid, v)
	h.send(cl, "cancel", "req", "c", "task_id", itoa(b))
	h.expect(cl, "cancelled")
	h.accepted(ex, tid, v, "succeeded")
	require.Equal(t, Pending, h.state(c))
	h.send(cl, "cancel", "req", "c", "task_id", itoa(c))
	h.expect(cl, "cancelled")

	h.send(cl, "purge_where", "req", "p", "task_type", "x")
	require.Equal(t, "1", h.expect(cl, "matched").Value("count"))
	m := h.requeue(cl, b)
	assert.Equal(t, string(wire.CodeIllegalTransition), m.Value("code"))
	assert.Contains(t, m.Value("message"), "no longer known")
	// c had left waiting: its forgotten dependency had succeeded.
	m = h.requeue(cl, c)
	require.Equal(t, "requeued", m.Type(), "%s", m)
	assert.Equal(t, "pending", m.Value("state"))
	h.checkReplay()
}

// Replay and a snapshot give the requeued state back, reason included;
// an old retention entry does not hold back the ones behind it.
func TestRequeue_DurableAndRetention(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	id := h.submit(cl, "task_type", "x")
	other := h.submit(cl, "task_type", "z")
	h.send(cl, "cancel", "req", "c", "task_id", itoa(id))
	h.expect(cl, "cancelled")
	h.send(cl, "cancel", "req", "c", "task_id", itoa(other))
	h.expect(cl, "cancelled")
	h.advance(time.Hour)
	require.Equal(t, "requeued", h.requeue(cl, id, "reason", "again").Type())
	h.send(cl, "cancel", "req", "c", "task_id", itoa(id))
	h.expect(cl, "cancelled")
	// Retention holds [id (stale), other, id]: other goes, id stays.
	h.advance(DefaultRetention - 30*time.Minute)
	assert.Nil(t, h.c.tasks.get(other), "past its retention")
	assert.NotNil(t, h.c.tasks.get(id), "ended again later: kept")
	h.checkReplay()

	entries := snapshotEntries(t, h.c)
	h.restartFrom(entries, len(h.fx.records))
	assert.Equal(t, "again", h.get(id).requeueReason())
	assert.Equal(t, uint64(1), h.get(id).requeues())
}

// The inspector shows a requeue in its task's history, with the reason.
func TestRequeue_Described(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	id := h.cancelled(cl, "x", 1)[0]
	require.Equal(t, "requeued", h.requeue(cl, id, "reason", "why not").Type())
	d, err := DescribeRecord(h.fx.records[len(h.fx.records)-1])
	require.NoError(t, err)
	assert.Equal(t, "requeue", d.Kind)
	assert.Equal(t, []uint64{id}, d.TaskIDs)
	assert.Contains(t, d.Text, "reason=why not")
	assert.Contains(t, d.Text, "state=pending")
}

// A keyed submit with wait=true after a requeue waits for the new run.
func TestRequeue_KeyedWaitFollowsNewRun(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	id := h.submit(cl, "task_type", "x", "key", "k")
	h.send(cl, "cancel", "req", "c", "task_id", itoa(id))
	h.expect(cl, "cancelled")
	require.Equal(t, "requeued", h.requeue(cl, id).Type())
	h.send(cl, "submit", "req", "w", "task_type", "x", "key", "k", "wait", "true")
	m := h.expect(cl, "submitted")
	assert.Equal(t, "true", m.Value("duplicate"))
	h.none(cl)
	h.send(cl, "cancel", "req", "c", "task_id", itoa(id))
	done := h.expect(cl, "done")
	assert.Equal(t, "cancelled", done.Value("state"))
	assert.Equal(t, "w", done.Value("req"))
	h.expect(cl, "cancelled")
}

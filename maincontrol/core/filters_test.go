package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// Tests of protocol section 8.4 (filters, bulk requeue, cancel, purge).

// bulk sends a bulk request and returns its reply.
func (h *harness) bulk(p PeerID, typ string, kv ...string) *wire.Message {
	h.t.Helper()
	h.send(p, typ, append([]string{"req", "b"}, kv...)...)
	fs := h.fx.frames[p]
	require.NotEmpty(h.t, fs)
	m := fs[0]
	h.fx.frames[p] = fs[1:]
	require.Equal(h.t, "b", m.Value("req"), "%s", m)
	return m
}

// cancelled submits n tasks of typ and cancels them, returning the ids.
func (h *harness) cancelled(p PeerID, typ string, n int) []uint64 {
	h.t.Helper()
	var ids []uint64
	for range n {
		id := h.submit(p, "task_type", typ)
		h.send(p, "cancel", "req", "c", "task_id", itoa(id))
		h.expect(p, "cancelled")
		ids = append(ids, id)
	}
	return ids
}

func TestFilters_BadRequests(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	for _, tc := range []struct {
		typ string
		kv  []string
	}{
		{"requeue_where", nil},                                   // no filter key
		{"requeue_where", []string{"limit", "5"}},                // still none
		{"requeue_where", []string{"state", "pending"}},          // not a state it acts on
		{"cancel_where", []string{"state", "failed"}},            // same
		{"purge_where", []string{"state", "running"}},            // same
		{"cancel_where", []string{"ended_before", "5"}},          // no end to compare
		{"purge_where", []string{"state", "", "limit", "0"}},     // limit 1 to 1000
		{"purge_where", []string{"state", "", "limit", "1001"}},  // same
		{"purge_where", []string{"error", ""}},                   // empty text
		{"purge_where", []string{"task_type", ""}},               // empty type
		{"purge_where", []string{"ended_after", "x"}},            // not a number
		{"purge_where", []string{"state", "", "dry_run", "yes"}}, // not a boolean
		{"requeue_where", []string{"state", "", "reason", string(make([]byte, maxReasonLen+1))}},
	} {
		m := h.bulk(cl, tc.typ, tc.kv...)
		assert.Equal(t, string(wire.CodeBadRequest), m.Value("code"), "%s %v: %s", tc.typ, tc.kv, m)
	}
	assert.False(t, h.fx.closed[cl])
}

func TestFilters_RequeueWhere(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	xs := h.cancelled(cl, "x", 3)
	ys := h.cancelled(cl, "y", 2)

	m := h.bulk(cl, "requeue_where", "task_type", "x", "dry_run", "true")
	assert.Equal(t, "3", m.Value("count"))
	assert.Equal(t, "true", m.Value("dry_run"))
	for _, id := range xs {
		assert.Equal(t, Cancelled, h.state(id), "a dry run changes nothing")
	}
	records := len(h.fx.records)

	m = h.bulk(cl, "requeue_where", "task_type", "x", "limit", "2", "reason", "bulk")
	assert.Equal(t, "matched", m.Type())
	assert.Equal(t, "2", m.Value("count"))
	assert.Equal(t, itoa(xs[1]), m.Value("next"), "stopped at the limit")
	assert.Equal(t, Pending, h.state(xs[0]))
	assert.Equal(t, Pending, h.state(xs[1]))
	assert.Equal(t, Cancelled, h.state(xs[2]))
	assert.Equal(t, "bulk", h.get(xs[0]).requeueReason())
	assert.Greater(t, len(h.fx.records), records)

	m = h.bulk(cl, "requeue_where", "task_type", "x", "after", m.Value("next"))
	assert.Equal(t, "1", m.Value("count"))
	assert.False(t, m.Has("next"), "every task looked at")
	for _, id := range ys {
		assert.Equal(t, Cancelled, h.state(id), "other types untouched")
	}
	h.checkReplay()
}

// requeue_where goes in ascending ids: a dependency requeued in the
// same request counts as not ended, so its dependent waits. A dry run
// counts the same way.
func TestFilters_RequeueWhereChain(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	a := h.submit(cl, "task_type", "x")
	b := h.submit(cl, "task_type", "x", "depends_on", itoa(a))
	h.send(cl, "cancel", "req", "c", "task_id", itoa(a))
	h.expect(cl, "cancelled")
	require.Equal(t, Cancelled, h.state(b))

	m := h.bulk(cl, "requeue_where", "task_type", "x", "dry_run", "true")
	assert.Equal(t, "2", m.Value("count"))
	assert.False(t, m.Has("skipped"))
	m = h.bulk(cl, "requeue_where", "task_type", "x", "state", "cancelled")
	assert.Equal(t, "2", m.Value("count"))
	assert.Equal(t, Pending, h.state(a))
	assert.Equal(t, Waiting, h.state(b))
	h.checkReplay()
}

func TestFilters_ErrorAndEndedTimes(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	a := h.submit(cl, "task_type", "x")
	h.failTask(ex, a, "disk full on /var")
	t1 := h.clock.T.UnixMilli()
	h.advance(time.Second)
	b := h.submit(cl, "task_type", "x")
	h.failTask(ex, b, "network down")

	m := h.bulk(cl, "requeue_where", "error", "disk full", "dry_run", "true")
	assert.Equal(t, "1", m.Value("count"))
	m = h.bulk(cl, "purge_where", "ended_before", itoa(uint64(t1+1)), "dry_run", "true")
	assert.Equal(t, "1", m.Value("count"), "a only")
	m = h.bulk(cl, "purge_where", "ended_after", itoa(uint64(t1+1)), "dry_run", "true")
	assert.Equal(t, "1", m.Value("count"), "b only")
	m = h.bulk(cl, "purge_where", "state", "failed", "ended_after", itoa(uint64(t1)), "ended_before", itoa(uint64(t1+1)))
	assert.Equal(t, "1", m.Value("count"), "at or after, and before")
	assert.Nil(t, h.c.tasks.get(a), "purged")
	assert.NotNil(t, h.c.tasks.get(b))
	h.send(cl, "query", "req", "q", "task_id", itoa(a))
	h.expectErr(cl, wire.CodeUnknownTask)
	h.checkReplay()
}

func TestFilters_CancelWhere(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	run := h.submit(cl, "task_type", "x")
	tid, ver := h.task(ex)
	h.start(ex, tid, ver)
	p1 := h.submit(cl, "task_type", "x")
	dep := h.submit(cl, "task_type", "y", "depends_on", itoa(p1))
	other := h.submit(cl, "task_type", "z")

	m := h.bulk(cl, "cancel_where", "task_type", "x", "dry_run", "true")
	assert.Equal(t, "2", m.Value("count"))
	assert.Equal(t, Running, h.state(run))
	m = h.bulk(cl, "cancel_where", "task_type", "x")
	assert.Equal(t, "2", m.Value("count"))
	assert.Equal(t, Cancelled, h.state(run))
	assert.Equal(t, Cancelled, h.state(p1))
	assert.Equal(t, Cancelled, h.state(dep), "its dependent follows, not counted")
	assert.Equal(t, Pending, h.state(other))
	c := h.expect(ex, "cancel")
	assert.Equal(t, itoa(run), c.Value("task_id"), "the executor is told")
	m = h.bulk(cl, "cancel_where", "task_type", "x")
	assert.Equal(t, "0", m.Value("count"))
	h.checkReplay()
}

func TestFilters_PurgeWhereAndScanBound(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ids := h.cancelled(cl, "x", 5)
	live := h.submit(cl, "task_type", "x", "key", "k1")
	m := h.bulk(cl, "purge_where", "task_type", "x", "dry_run", "true")
	assert.Equal(t, "5", m.Value("count"))
	m = h.bulk(cl, "purge_where", "task_type", "x", "limit", "3")
	assert.Equal(t, "3", m.Value("count"))
	assert.Equal(t, itoa(ids[2]), m.Value("next"))
	m = h.bulk(cl, "purge_where", "task_type", "x", "after", m.Value("next"))
	assert.Equal(t, "2", m.Value("count"))
	assert.Equal(t, 2, h.fx.waits["matched"][WaitConfirm], "a change is confirmed once durable")
	assert.Equal(t, 1, h.fx.waits["matched"][WaitDurable], "the dry run")
	for _, id := range ids {
		assert.Nil(t, h.c.tasks.get(id))
	}
	assert.Equal(t, Pending, h.state(live))
	h.checkReplay()
}

// One request looks at no more than maxFilterScan tasks.
func TestFilters_ScanIsBounded(t *testing.T) {
	h := newHarness(t)
	f := taskFilter{limit: maxFilterLimit, hasType: true, typ: "none"}
	f.states[Pending] = true
	cl := h.client()
	for range maxFilterScan + 10 {
		h.c.Handle(cl, msg("submit", "task_type", "x"))
	}
	h.drain(cl)
	ids, next := h.c.scanFilter(&f)
	assert.Empty(t, ids)
	assert.Equal(t, uint64(maxFilterScan), next, "stopped after maxFilterScan tasks")
	f.after = next
	_, next = h.c.scanFilter(&f)
	assert.Zero(t, next, "the rest, to the end")
}

// While the log cannot be written, admin changes get unavailable and
// change nothing; a dry run is still answered.
func TestFilters_Unavailable(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ids := h.cancelled(cl, "x", 2)
	h.c.SetAvailable(false)
	m := h.requeue(cl, ids[0])
	assert.Equal(t, string(wire.CodeUnavailable), m.Value("code"))
	for _, typ := range []string{"requeue_where", "purge_where"} {
		m = h.bulk(cl, typ, "task_type", "x")
		assert.Equal(t, string(wire.CodeUnavailable), m.Value("code"), typ)
	}
	m = h.bulk(cl, "requeue_where", "task_type", "x", "dry_run", "true")
	assert.Equal(t, "2", m.Value("count"))
	for _, id := range ids {
		assert.Equal(t, Cancelled, h.state(id))
	}
}

package core

import (
	"testing"
	"time"
)

// Spec 8.8: run_ms is absent when the attempt that ended the task never
// started: here a cancel while pending, after an earlier attempt ran.
func TestDurations_NoRunMsWhenCancelledPendingAfterRetry(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	id := h.submit(cl, "task_type", "x", "max_attempts", "3")
	ex := h.executor("e1", "x", 1)
	_, ver := h.task(ex)
	h.start(ex, id, ver)
	h.advance(5 * time.Second)
	h.accepted(ex, id, ver, "failed", "retryable", "true", "error", "boom")
	h.c.Closed(ex)
	h.advance(time.Hour) // the retry delay ends: pending, no executor
	if s := h.state(id); s != Pending {
		t.Fatalf("state %v", s)
	}
	h.send(cl, "cancel", "req", "c", "task_id", itoa(id))
	h.expect(cl, "cancelled")
	q := h.query(cl, id)
	if q.Has("run_ms") {
		t.Fatalf("run_ms=%s on a task cancelled while pending: %s", q.Value("run_ms"), q)
	}
}

// The same after a requeue: the failed attempt's start is not kept.
func TestDurations_NoRunMsWhenCancelledPendingAfterRequeue(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	id := h.submit(cl, "task_type", "x", "max_attempts", "1")
	ex := h.executor("e1", "x", 1)
	_, ver := h.task(ex)
	h.start(ex, id, ver)
	h.accepted(ex, id, ver, "failed", "retryable", "false", "error", "boom")
	h.c.Closed(ex)
	h.advance(time.Hour)
	h.send(cl, "requeue", "req", "r", "task_id", itoa(id))
	h.expect(cl, "requeued")
	h.send(cl, "cancel", "req", "c", "task_id", itoa(id))
	h.expect(cl, "cancelled")
	q := h.query(cl, id)
	if q.Has("run_ms") {
		t.Fatalf("run_ms=%s on a requeued task cancelled while pending", q.Value("run_ms"))
	}
}

// The same when the running attempt is lost with its executor: the task
// retries, goes back to pending, and a cancel there shows no run_ms.
func TestDurations_NoRunMsWhenCancelledPendingAfterLostExecutor(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	id := h.submit(cl, "task_type", "x", "max_attempts", "3")
	ex := h.executor("e1", "x", 1)
	_, ver := h.task(ex)
	h.start(ex, id, ver)
	h.advance(5 * time.Second)
	h.c.Closed(ex)
	h.advance(time.Hour) // the attempt is lost: retrying
	h.advance(time.Hour) // the retry delay ends: pending, no executor
	if s := h.state(id); s != Pending {
		t.Fatalf("state %v", s)
	}
	h.send(cl, "cancel", "req", "c", "task_id", itoa(id))
	h.expect(cl, "cancelled")
	q := h.query(cl, id)
	if q.Has("run_ms") {
		t.Fatalf("run_ms=%s on a retried task cancelled while pending: %s", q.Value("run_ms"), q)
	}
}

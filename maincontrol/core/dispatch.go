package core

import (
	"container/heap"
	"log/slog"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// dispatchDirty matches pending tasks with free executor slots for every
// task type whose queues or free executors changed. Across types the most
// urgent task goes first, by priority, then by when it became pending
// (spec section 5). An executor serving several types thus gives a freed
// slot to the most urgent of their tasks. Always serving its first listed
// type would starve the others. Each decision costs a heap top, a queue pop
// and a step of a heap of the dirty types. It scans no tasks or executors.
func (c *Core) dispatchDirty() {
	if !c.available || len(c.dirty) == 0 {
		return
	}
	if len(c.dirty) == 1 {
		// With one type, its own queues give the order (the usual case). A
		// dispatch only takes slots, so it marks no other type dirty. If
		// one is, the general path below orders them.
		tt := c.dirty[0]
		c.dirty = c.dirty[:0]
		tt.dirty = false
		c.dispatchType(tt)
		if len(c.dirty) == 0 {
			return
		}
	}
	h := c.urgent[:0]
	for _, tt := range c.dirty {
		c.pushUrgent(&h, tt)
	}
	c.dirty = c.dirty[:0]
	for h.Len() > 0 {
		tt := heap.Pop(&h).(*taskType)
		t, e := c.nextPending(tt), tt.free.top()
		if t == nil || e == nil || !c.mayDispatch(tt) {
			tt.dirty = false // nothing left to match: marked again when that changes
			continue
		}
		c.dispatch(t, e)
		for _, nt := range c.dirty { // made dirty by the dispatch (not in the heap)
			c.pushUrgent(&h, nt)
		}
		c.dirty = c.dirty[:0]
		c.pushUrgent(&h, tt) // placed by its next task
	}
	c.urgent = h
}

func (c *Core) dispatchType(tt *taskType) {
	for tt.pending > 0 && !tt.paused {
		e := tt.free.top()
		if e == nil || !c.mayDispatch(tt) {
			return
		}
		t := c.nextPending(tt)
		if t == nil {
			return
		}
		c.dispatch(t, e)
	}
}

// nextPending returns the first valid entry of the most urgent non-empty
// queue, dropping stale entries on the way.
func (c *Core) nextPending(tt *taskType) *task {
	for p := int(tt.top); p >= 0; p-- {
		q := tt.queues[p]
		if q == nil {
			continue
		}
		c.dropStaleHead(q)
		if q.len() > 0 {
			tt.top = int8(p)
			return c.tasks.get(q.peek().id)
		}
	}
	tt.top = -1
	tt.pending = 0 // only stale entries were left
	return nil
}

// dispatch sends pending task t to executor e. Its task frame waits for the
// records that made t dispatchable, not for the dispatch record (idx_gates.go).
func (c *Core) dispatch(t *task, e *executor) {
	now := c.now()
	pendingSince := t.updatedMs
	attempt := t.attempt + 1
	if t.flags&flagRequeued != 0 {
		attempt = t.attempt // taken back before it started: no attempt used
	}
	r := c.newRecord(recDispatch)
	r.id, r.version, r.attempt, r.exec, r.at = t.id, c.nextVersion(t), attempt, e.id, now
	r.execRef = e
	r.due = now + c.cfg.StartTimeout.Milliseconds()
	gate := c.dispatchGate(t, e)
	if !c.commit(r) {
		return
	}
	t = c.tasks.get(r.id)
	c.policyDispatched(t.typ, now)
	c.obs.Dispatched(time.Duration(max(0, now-pendingSince)) * time.Millisecond)
	c.logTransition(t, Pending, Dispatched, "dispatch")
	b := wire.Begin(c.frame[:0], wire.KindTask)
	b.UintK(kTaskID, t.id)
	b.UintK(kVersion, t.version)
	b.StrK(kTaskType, t.typ.name)
	b.UintK(kAttempt, uint64(t.attempt))
	b.UintK(kMaxAttempts, t.maxAttempts)
	b.UintK(kTimeoutMs, t.timeoutMs)
	addTrace(&b, t)
	b.UintK(kStateVersion, c.stateVer)
	if of := c.rollbackOf(t.id); of != 0 {
		b.Uint("rollback_of", of)
	}
	b.RawString(t.args, int(t.argKeys))
	c.sendTask(e.peer, &b, gate)
}

// logTransition logs a task transition with the fields the brief asks for.
// It is at debug level, since full speed makes several per task.
func (c *Core) logTransition(t *task, from, to State, why string) {
	c.hist.add(t.id, Transition{AtMs: t.updatedMs, Version: t.version, Attempt: t.attempt,
		From: from, To: to, Executor: t.execID})
	if !c.debugEnabled() {
		return
	}
	fromName := from.String()
	// setState kept when the state left began. A new task left none.
	inState := max(0, t.updatedMs-c.leftMs)
	if from == 0 {
		fromName = "none" // created by this transition
		inState = 0
	}
	c.log.Debug("task transition",
		slog.Uint64("task_id", t.id), slog.Uint64("version", t.version),
		slog.String("from", fromName), slog.String("to", to.String()),
		slog.String("executor", t.execID), slog.String("trace_id", t.trace()),
		slog.String("why", why), slog.Int64("in_state_ms", inState))
}

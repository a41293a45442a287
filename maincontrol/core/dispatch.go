package core

import (
	"log/slog"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// dispatchDirty matches pending tasks with free executor slots for every
// task type whose queues or free executors changed. Each decision costs a
// heap top and a queue pop: no scan over tasks or executors.
func (c *Core) dispatchDirty() {
	if !c.available || len(c.dirty) == 0 {
		return
	}
	for i := 0; i < len(c.dirty); i++ { // dispatching may mark more types dirty
		tt := c.dirty[i]
		tt.dirty = false
		c.dispatchType(tt)
	}
	c.dirty = c.dirty[:0]
}

func (c *Core) dispatchType(tt *taskType) {
	for tt.pending > 0 {
		e := tt.free.top()
		if e == nil {
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
		q := &tt.queues[p]
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

// dispatch sends pending task t to executor e. The record goes first, so the
// task frame reaches e only once the dispatch is durable.
func (c *Core) dispatch(t *task, e *executor) {
	now := c.now()
	pendingSince := t.updatedMs
	attempt := t.attempt + 1
	if t.flags&flagRequeued != 0 {
		attempt = t.attempt // taken back before it started: no attempt used
	}
	r := c.newRecord(recDispatch)
	r.id, r.version, r.attempt, r.exec, r.at = t.id, t.version+1, attempt, e.id, now
	r.execRef = e
	r.due = now + c.cfg.StartTimeout.Milliseconds()
	if !c.commit(r) {
		return
	}
	t = c.tasks.get(r.id)
	c.obs.Dispatched(time.Duration(max(0, now-pendingSince)) * time.Millisecond)
	c.logTransition(t, Pending, Dispatched, "dispatch")
	b := wire.Begin(c.frame[:0], "task")
	b.UintK(kTaskID, t.id)
	b.UintK(kVersion, uint64(t.version))
	b.StrK(kTaskType, t.typ.name)
	b.UintK(kAttempt, uint64(t.attempt))
	b.UintK(kMaxAttempts, t.maxAttempts)
	b.UintK(kTimeoutMs, t.timeoutMs)
	addTrace(&b, t)
	b.UintK(kStateVersion, c.stateVer)
	b.RawString(t.args, int(t.argKeys))
	c.confirm(e.peer, &b)
}

// logTransition logs a task transition with the fields the brief asks for.
// It is at debug level: at full speed there are several per task.
func (c *Core) logTransition(t *task, from, to State, why string) {
	if !c.debugEnabled() {
		return
	}
	fromName := from.String()
	if from == 0 {
		fromName = "none" // created by this transition
	}
	c.log.Debug("task transition",
		slog.Uint64("task_id", t.id), slog.Uint64("version", uint64(t.version)),
		slog.String("from", fromName), slog.String("to", to.String()),
		slog.String("executor", t.execID), slog.String("trace_id", t.trace()),
		slog.String("why", why))
}

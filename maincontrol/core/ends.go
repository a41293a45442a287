package core

import (
	"strconv"

	"github.com/apollo11/apollo11/wire"
)

// endTask moves a task to a terminal state and follows the consequences.
// Its waiters get `done`. Its waiting dependents are released, cancelled
// or skipped (steps.go), down the chain. sets and stateVer carry an
// accepted result's shared-state changes.
func (c *Core) endTask(id uint64, to State, errText, out string, outKeys uint16, why string) bool {
	return c.endWith(id, to, errText, out, outKeys, nil, 0, 0, why)
}

// endWith is endTask with an accepted result's shared-state changes, and
// flags for the ended task. flagTakenBack says its dispatch was taken back.
func (c *Core) endWith(id uint64, to State, errText, out string, outKeys uint16, sets []kv, stateVer uint64, flags taskFlags, why string) bool {
	from := c.tasks.get(id).state
	r := c.newRecord(recEnd)
	r.id, r.at, r.state, r.errText, r.out, r.outKeys = id, c.now(), to, errText, out, outKeys
	r.flags = flags
	r.sets = append(r.sets, sets...)
	r.stateVer = stateVer
	if !c.commit(r) {
		return false
	}
	t := c.tasks.get(id)
	c.obs.Ended(to)
	c.logTransition(t, from, to, why)
	c.notifyDone(t)
	c.followDependents(id, to)
	return true
}

// followDependents releases, cancels or skips the waiting tasks of a task
// that just ended (depsVerdict). It iterates, so long chains do not recurse
// deeply. Tasks are followed in the order they ended, a queue, not a stack.
// So a task with several ending dependencies names the first that ended.
func (c *Core) followDependents(id uint64, st State) {
	type ended struct {
		id    uint64
		state State
		deps  []uint64
	}
	if len(c.released) == 0 {
		return
	}
	work := []ended{{id, st, append([]uint64(nil), c.released...)}}
	for i := 0; i < len(work); i++ {
		w := work[i]
		// An optional task's failure lets its dependents go on.
		blocks := depFailed(w.state)
		if blocks {
			if wt := c.tasks.get(w.id); wt != nil && wt.optional() {
				blocks = false
			}
		}
		for _, d := range w.deps {
			t := c.tasks.get(d)
			if t == nil || t.state != Waiting {
				continue
			}
			v, blocker := cancelIt, c.tasks.get(w.id)
			if !blocks || t.whenFailed() {
				v, blocker = c.depsVerdict(t)
			}
			switch v {
			case releaseIt:
				c.releaseWaiting(d, releaseWhy(t))
			case cancelIt, skipIt:
				if c.endWaiting(d, v, blocker) {
					work = append(work, ended{d, Cancelled, append([]uint64(nil), c.released...)})
				}
			}
		}
	}
}

// releaseWaiting moves a waiting task whose dependencies let it run to
// pending.
func (c *Core) releaseWaiting(id uint64, why string) bool {
	if r, i, refs := c.runStepOf(id); refs {
		return c.releaseRunStep(id, r, i, why)
	}
	r := c.newRecord(recReady)
	r.id, r.at = id, c.now()
	if !c.commit(r) {
		return false
	}
	c.logTransition(c.tasks.get(id), Waiting, Pending, why)
	return true
}

// shortDeps is the length of a depends_on list up to which it is scanned
// whole, each time, with no bookkeeping.
const shortDeps = 16

// failAttempt ends a running task's attempt that did not succeed. The task
// goes retrying while attempts remain and the failure is retryable, else
// failed. The attempt's error and outputs stay visible until the next one.
// immediate skips the backoff (bye). takenBack says the dispatch was taken
// back, by task timeout, loss, bye, reconciliation, or not being listed
// after a restart. It stops being current even when the task fails. A late
// result for it is stale.
func (c *Core) failAttempt(id uint64, retryable, immediate, takenBack bool, errText, out string, outKeys uint16, why string) {
	t := c.tasks.get(id)
	if !retryable || uint64(t.attempt) >= t.maxAttempts {
		var flags taskFlags
		if takenBack {
			flags = flagTakenBack
		}
		c.endWith(id, Failed, errText, out, outKeys, nil, 0, flags, why)
		return
	}
	now := c.now()
	r := c.newRecord(recRetry)
	r.id, r.at, r.errText, r.out, r.outKeys = id, now, errText, out, outKeys
	switch {
	case immediate:
		r.due = now
	case c.cfg.MaxRetrying < 0 || c.armed < c.cfg.MaxRetrying:
		r.due = now + c.backoff(t.typ, t.attempt).Milliseconds()
	default:
		r.due = 0 // waits its turn behind the retry cap
	}
	if !c.commit(r) {
		return
	}
	c.obs.Retried()
	c.logTransition(c.tasks.get(id), Running, Retrying, why)
	if immediate {
		c.retryNow(id, "retry without delay: "+why)
	}
}

// retryNow moves a retrying task to pending and lets the next one waiting
// behind the retry cap start its backoff.
func (c *Core) retryNow(id uint64, why string) {
	r := c.newRecord(recReady)
	r.id, r.at = id, c.now()
	if c.commit(r) {
		c.logTransition(c.tasks.get(id), Retrying, Pending, why)
	}
	c.armWaiting()
}

// armWaiting starts the backoff of tasks waiting behind the retry cap while
// there is room.
func (c *Core) armWaiting() {
	for c.retryWait.len() > 0 && (c.cfg.MaxRetrying < 0 || c.armed < c.cfg.MaxRetrying) {
		e := c.retryWait.pop()
		t := c.tasks.get(e.id)
		if t == nil || t.state != Retrying || t.flags&flagArmed != 0 {
			continue
		}
		now := c.now()
		r := c.newRecord(recArm)
		r.id, r.at, r.due = t.id, now, now+c.backoff(t.typ, t.attempt).Milliseconds()
		c.commit(r)
	}
}

// cancelTask cancels a task not yet ended, telling its executor, and
// reports whether it did.
func (c *Core) cancelTask(t *task, why string) bool {
	id, from, ver, e := t.id, t.state, t.version, c.execs[t.execID]
	out, n := t.out()
	if !c.endTask(id, Cancelled, t.errText(), out, uint16(n), why) {
		return false
	}
	if from == Dispatched || from == Running {
		c.sendCancel(e, id, ver)
	}
	if from == Retrying {
		c.armWaiting()
	}
	return true
}

// cancelRequest handles a client's `cancel task_id=<n>`.
func (c *Core) cancelRequest(p *peer, m *wire.Message, req string) {
	t := c.requestedTask(p, m, req)
	if t == nil {
		return
	}
	id := t.id
	if t.state.Terminal() {
		c.sendError(p, req, wire.CodeIllegalTransition, "task "+strconv.FormatUint(id, 10)+" already "+t.state.String())
		return
	}
	if !c.writable(p, req) {
		return
	}
	if !c.cancelTask(t, "cancelled by client") {
		c.sendError(p, req, wire.CodeIllegalTransition, "task "+strconv.FormatUint(id, 10)+" cannot be cancelled")
		return
	}
	b := c.begin(wire.KindCancelled, req)
	b.UintK(kTaskID, id)
	c.confirm(p.id, &b)
}

package core

import "strconv"

// Step semantics of plain tasks (protocol section 5, submit), set by two
// rows of the task field table:
//   - optional=true: when the task ends failed or cancelled, its waiting
//     dependents count it as succeeded, so they are released, not cancelled.
//   - when=failed: the task waits until every dependency has ended, then
//     runs when one of them failed or was cancelled; when all succeeded it
//     ends cancelled with error=skipped. A dependency's failure never
//     cancels it.
//
// A waiting task may thus wait past a dependency that ended failed or
// cancelled. Retention may forget that dependency, and a requeue may run
// it again, so two flags keep what the dependency lists alone would lose:
// flagDepFailed on a when=failed task, and flagTolerated on the ended
// dependency. Both are set in apply, so replay reaches the same flags.

// errSkipped is the error of a when=failed task whose dependencies all
// succeeded: v1 clients know eight states, so it ends cancelled.
const errSkipped = "skipped"

// optional reports whether the task was submitted with optional=true.
func (t *task) optional() bool { return t.x != nil && t.x.fields[fieldOptional] != "" }

// whenFailed reports whether the task was submitted with when=failed.
func (t *task) whenFailed() bool { return t.x != nil && t.x.fields[fieldWhen] != "" }

// depFailed reports whether a dependency's end counts as a failure.
func depFailed(s State) bool { return s == Failed || s == Cancelled }

// verdict is what a waiting task does once some dependency has ended.
type verdict uint8

const (
	keepWaiting verdict = iota
	releaseIt           // to pending
	cancelIt            // a required dependency failed or was cancelled
	skipIt              // when=failed, and every dependency succeeded
)

// depsVerdict decides what waiting task t does now, and names the
// dependency that cancels it. A dependency forgotten by retention has
// ended; for a task without when=failed it did not block (had it, t would
// have been cancelled then).
//
// A task with many dependencies is asked once per dependency that ends:
// rescanning from the start each time would be quadratic (30,000
// dependencies, 450 million lookups). A dependency that ended and let t
// go on stays so until it is requeued, which resets the cursor (relink),
// so the scan resumes where the last one stopped.
func (c *Core) depsVerdict(t *task) (verdict, *task) {
	deps := t.deps()
	var cur depCursor
	long := deps.len() > shortDeps
	if long {
		cur = c.depsMet[t.id]
	}
	wf := t.whenFailed()
	for {
		at := cur
		d, ok := deps.next(&cur)
		if !ok {
			break
		}
		switch dt := c.tasks.get(d); {
		case dt == nil || dt.state == Succeeded:
		case !dt.state.Terminal():
			if long {
				c.depsMet[t.id] = at
			}
			return keepWaiting, nil
		case !wf && !dt.optional():
			return cancelIt, dt
		}
	}
	if long {
		delete(c.depsMet, t.id)
	}
	if wf && t.flags&flagDepFailed == 0 {
		return skipIt, nil
	}
	return releaseIt, nil
}

// releaseWhy is the reason logged for a release by depsVerdict.
func releaseWhy(t *task) string {
	if t.whenFailed() {
		return "a dependency failed or was cancelled (when=failed)"
	}
	return "dependencies succeeded"
}

// endWaiting ends waiting task id cancelled, as depsVerdict decided: with
// the blocking dependency named, or skipped. It reports whether it did.
func (c *Core) endWaiting(id uint64, v verdict, blocker *task) bool {
	msg, why := errSkipped, "skipped: every dependency succeeded (when=failed)"
	if v == cancelIt {
		msg = "dependency " + strconv.FormatUint(blocker.id, 10) + " " + blocker.state.String()
		why = msg
	}
	r := c.newRecord(recEnd)
	r.id, r.at, r.state, r.errText = id, c.now(), Cancelled, msg
	if !c.commit(r) {
		return false
	}
	t := c.tasks.get(id)
	c.obs.Ended(Cancelled)
	c.logTransition(t, Waiting, Cancelled, why)
	c.notifyDone(t)
	return true
}

// tolerate notes that waiting (or just released) task t goes past its
// dependency dt, which ended failed or cancelled: t, when it runs on
// failure, remembers it; dt, when t tolerates it, is marked so that its
// requeue links t back. t must be writable.
func (c *Core) tolerate(t, dt *task) {
	wf := t.whenFailed()
	if wf {
		t.flags |= flagDepFailed
	}
	if (wf || dt.optional()) && dt.flags&flagTolerated == 0 {
		c.tasks.mut(dt.id).flags |= flagTolerated
	}
}

// noteEnded is applyEnd's part for dt, which just ended failed or
// cancelled with c.released its former dependents.
func (c *Core) noteEnded(dt *task) {
	opt := dt.optional()
	for _, id := range c.released {
		t := c.tasks.get(id)
		if t == nil || t.state != Waiting {
			continue
		}
		if t.whenFailed() {
			c.tasks.mut(id).flags |= flagDepFailed
			dt.flags |= flagTolerated
		} else if opt {
			dt.flags |= flagTolerated
		}
	}
}

// noteDeps sets t's flags from its dependencies as they are now: when t
// starts waiting again (requeue, relink) or is made. A when=failed task
// keeps a failure it saw only while a dependency is forgotten: that one
// may be the dependency that failed. t must be writable.
func (c *Core) noteDeps(t *task) {
	keep := t.flags & flagDepFailed
	t.flags &^= flagDepFailed
	for d := range t.deps().all() {
		switch dt := c.tasks.get(d); {
		case dt == nil:
			t.flags |= keep
		case depFailed(dt.state):
			c.tolerate(t, dt)
		}
	}
}

// relink runs when dt, which waiting tasks went past, is requeued: they
// wait for it again, so they are listed as its dependents once more and
// their scans restart. Finding them takes a scan of the waiting tasks,
// paid only by the requeue of a dependency that was tolerated.
func (c *Core) relink(dt *task) {
	if dt.flags&flagTolerated == 0 {
		return
	}
	dt.flags &^= flagTolerated
	if c.counts[Waiting] == 0 {
		return
	}
	var found []uint64
	c.tasks.scan(0, Waiting, func(t *task) bool {
		for d := range t.deps().all() {
			if d == dt.id {
				found = append(found, t.id)
				break
			}
		}
		return true
	})
	for _, id := range found {
		c.dependents.add(dt.id, id)
		delete(c.depsMet, id)
		if t := c.tasks.mut(id); t.whenFailed() {
			c.noteDeps(t)
		}
	}
}

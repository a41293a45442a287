package core

import (
	"slices"
	"strconv"

	"github.com/apollo11/apollo11/wire"
)

// settleRuns acts on the runs whose state changed: it makes their next
// compensation and tells their waiters they ended. It runs after each
// input, live only; Recovered marks every run, so a crash between a
// change and what follows from it loses nothing.
func (c *Core) settleRuns() {
	for len(c.runs.dirty) > 0 {
		dirty := c.runs.dirty
		c.runs.dirty = nil
		slices.Sort(dirty)
		dirty = slices.Compact(dirty)
		for _, id := range dirty {
			if r := c.runs.byID[id]; r != nil {
				c.settleRun(r)
			}
		}
	}
}

func (c *Core) settleRun(r *run) {
	if r.state == runCompensating || r.state == runFailed && r.needsCompensation() {
		c.compensateNext(r.id)
		r = c.runs.byID[r.id]
	}
	if r.state.ended() {
		c.runs.sweep = true
		c.notifyRunDone(r)
	}
}

// compensateNext makes the next compensation of a failed run: in reverse
// step order, each once the one before it has ended, whatever its outcome.
// A compensation whose args cannot be filled in is recorded as failed and
// the next one follows at once.
func (c *Core) compensateNext(id uint64) {
	for {
		r := c.runs.byID[id]
		i := nextCompensation(r)
		if i < 0 {
			return
		}
		if !c.available {
			c.runs.retry = append(c.runs.retry, id)
			return
		}
		s := &r.steps[i]
		typ := s.compType
		if typ == "" {
			typ = s.typ
		}
		rec := c.newRecord(recRunComp)
		x := &runRec{id: id, step: uint64(i), typ: typ}
		rec.run, rec.at = x, c.now()
		args, n, miss := fillArgs(s.compArgs, c.lookIn(r))
		switch {
		case miss != nil:
			x.compErr = miss.Error()
		case !c.argsFit(typ, r.trace, args, int(n), 1, rollbackKeyLen):
			x.compErr = errArgsTooLarge
		default:
			x.task = c.nextID
			rec.args, rec.argKeys = args, n
		}
		if !c.commit(rec) {
			return
		}
		if x.task != 0 {
			t := c.tasks.get(x.task)
			c.logTransition(t, 0, t.state, "compensation")
			c.log.Info("run compensating a step", "run_id", id, "step", s.id, "task_id", x.task, "rollback_of", r.first+uint64(i))
			return
		}
		c.log.Warn("run compensation not made", "run_id", id, "step", s.id, "err", x.compErr)
	}
}

// nextCompensation returns the step whose compensation comes next, or -1
// when none is due (one runs, or all are made).
func nextCompensation(r *run) int {
	if r.state != runCompensating && r.state != runFailed {
		return -1
	}
	for i := len(r.steps) - 1; i >= 0; i-- {
		s := &r.steps[i]
		switch {
		case !s.comp || s.st != Succeeded || s.compErr != "":
		case s.compTask == 0:
			return i
		case !s.compSt.Terminal():
			return -1
		}
	}
	return -1
}

// checkRunComp validates a recRunComp.
func (c *Core) checkRunComp(r *record) error {
	x := r.run
	ru := c.runs.byID[x.id]
	if ru == nil || x.step >= uint64(len(ru.steps)) {
		return errRunCorrupt("compensation of unknown run %d step %d", x.id, x.step)
	}
	if s := &ru.steps[x.step]; !s.comp || s.compTask != 0 || s.compErr != "" {
		return errRunCorrupt("run %d step %d: no compensation to make", x.id, x.step)
	}
	if x.task != 0 && (x.task < c.nextID || c.tasks.get(x.task) != nil) {
		return errRunCorrupt("compensation task id %d reused (next is %d)", x.task, c.nextID)
	}
	return nil
}

// applyRunComp makes one compensation (or records why it could not be).
func (c *Core) applyRunComp(r *record) {
	x := r.run
	ru := c.mutRun(x.id)
	ru.compensating = true
	s := &ru.steps[x.step]
	if x.task == 0 {
		s.compErr = x.compErr
	} else {
		var f fieldVals
		f[fieldLabel] = s.label
		nr := record{kind: recNew, id: x.task, typ: x.typ, priority: s.priority, maxAttempts: s.maxAtt,
			timeoutMs: s.timeout, at: r.at, state: Pending, trace: ru.trace, argKeys: r.argKeys, args: r.args, fields: f}
		c.applyNew(&nr)
		s.compTask, s.compSt = x.task, Pending
		c.runs.of[x.task] = runRef{run: x.id, step: uint16(x.step), comp: true}
		ru.live++
	}
	c.deriveRunState(ru, r.at)
	c.runs.dirty = append(c.runs.dirty, x.id)
}

// RollbackOf returns the step task a compensation undoes (0: t is none),
// for its task frame's rollback_of.
func (c *Core) rollbackOf(id uint64) uint64 {
	ref, ok := c.runs.of[id]
	if !ok || !ref.comp {
		return 0
	}
	return c.runs.byID[ref.run].first + uint64(ref.step)
}

// releaseRunStep releases a waiting step whose args hold references: they
// are filled in from the outputs its dependencies hold now, into the
// ready record. A missing output, or args too large once filled, fail it.
func (c *Core) releaseRunStep(id uint64, r *run, i int, why string) bool {
	s := &r.steps[i]
	args, n, miss := fillArgs(s.args, c.lookIn(r))
	switch {
	case miss != nil:
		return c.endTask(id, Failed, miss.Error(), "", 0, why)
	case !c.argsFit(s.typ, r.trace, args, int(n), 0, 0):
		return c.endTask(id, Failed, errArgsTooLarge, "", 0, why)
	}
	rec := c.newRecord(recReady)
	rec.id, rec.at = id, c.now()
	rec.filled, rec.args, rec.argKeys = true, args, n
	if !c.commit(rec) {
		return false
	}
	c.logTransition(c.tasks.get(id), Waiting, Pending, why)
	return true
}

// runStepOf returns the run and step of a step task whose args hold
// references, when id is one.
func (c *Core) runStepOf(id uint64) (*run, int, bool) {
	ref, ok := c.runs.of[id]
	if !ok || ref.comp {
		return nil, 0, false
	}
	r := c.runs.byID[ref.run]
	return r, int(ref.step), r.steps[ref.step].refs
}

// runCancel handles `run_cancel run_id=<n>`.
func (c *Core) runCancel(p *peer, m *wire.Message, req string) {
	r := c.requestedRun(p, m, req, false)
	if r == nil {
		return
	}
	live := c.runLiveTasks(r)
	if r.state.ended() && !(r.state == runCancelled && len(live) > 0) {
		c.sendError(p, req, wire.CodeIllegalTransition, "run "+strconv.FormatUint(r.id, 10)+" already "+r.state.String())
		return
	}
	if !c.writable(p, req) {
		return
	}
	if r.state != runCancelled {
		rec := c.newRecord(recRunCancel)
		rec.run, rec.at = &runRec{id: r.id}, c.now()
		if !c.commit(rec) {
			c.sendError(p, req, wire.CodeIllegalTransition, "run "+strconv.FormatUint(r.id, 10)+" cannot be cancelled")
			return
		}
	}
	for _, id := range live {
		if t := c.tasks.get(id); t != nil && !t.state.Terminal() {
			c.cancelTask(t, "run cancelled")
		}
	}
	// Counted after: cancelling a step cancels its waiting dependents too.
	n := len(live) - len(c.runLiveTasks(c.runs.byID[r.id]))
	c.log.Info("run cancelled", append(c.askedBy(p), "run_id", r.id, "tasks_cancelled", n)...)
	b := c.begin(wire.KindRunCancelled, req)
	b.Uint("run_id", r.id)
	b.Uint("cancelled", uint64(n))
	c.confirm(p.id, &b)
}

// runLiveTasks lists a run's tasks not ended, in ascending id.
func (c *Core) runLiveTasks(r *run) []uint64 {
	var ids []uint64
	for i := range r.steps {
		if t := c.tasks.get(r.first + uint64(i)); t != nil && !t.state.Terminal() {
			ids = append(ids, t.id)
		}
		if ct := r.steps[i].compTask; ct != 0 {
			if t := c.tasks.get(ct); t != nil && !t.state.Terminal() {
				ids = append(ids, t.id)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// runRequeueRefs refuses a plain requeue of a step that would go to
// pending with a reference that finds no output, as run_resume does.
func (c *Core) runRequeueRefs(t *task, to State) (wire.Code, string) {
	r, i, refs := c.runStepOf(t.id)
	if r != nil && r.compensating {
		// Its run's work was undone. Running a step again would leave the
		// run shown as rolled back while its steps run.
		return wire.CodeIllegalTransition, "task " + strconv.FormatUint(t.id, 10) + " is step " + r.steps[i].id +
			" of run " + strconv.FormatUint(r.id, 10) + ", which was (partly) rolled back: its work was undone"
	}
	if !refs || to != Pending {
		return "", ""
	}
	args, n, miss := fillArgs(r.steps[i].args, c.lookIn(r))
	switch {
	case miss != nil:
		return wire.CodeIllegalTransition, miss.Error() + ": requeue the step that makes it first"
	case !c.argsFit(t.typ.name, r.trace, args, int(n), 0, 0):
		return wire.CodeIllegalTransition, "step " + r.steps[i].id + ": " + errArgsTooLarge
	}
	return "", ""
}

// fillRequeue fills in again the references of a step a requeue sends
// to pending: its args then come from the outputs its dependencies hold
// now, as at a release.
func (c *Core) fillRequeue(rec *record) {
	r, i, refs := c.runStepOf(rec.id)
	if !refs || rec.state != Pending {
		return
	}
	if args, n, miss := fillArgs(r.steps[i].args, c.lookIn(r)); miss == nil {
		rec.filled, rec.args, rec.argKeys = true, args, n
	}
}

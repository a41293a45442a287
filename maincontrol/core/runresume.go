package core

import (
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/wire"
)

// defaultResumeReason is the requeue reason of a resume that gives none.
const defaultResumeReason = "run resume"

// runResume handles `run_resume run_id=<n> [from=<step>] [reason=<text>]`
// (protocol section 8.10): one record requeues the failed and cancelled
// steps, and with from= that step and its dependents, keeping the rest.
func (c *Core) runResume(p *peer, m *wire.Message, req string) {
	if !c.requireAdmin(p, m, req) {
		return
	}
	r := c.requestedRun(p, m, req, false)
	if r == nil {
		return
	}
	reason := m.Value("reason")
	if len(reason) > maxReasonLen {
		c.badRequest(p, req, &wire.ValueError{Key: "reason", Reason: "longer than " + strconv.Itoa(maxReasonLen) + " bytes"})
		return
	}
	if reason == "" {
		reason = defaultResumeReason
	}
	from := -1
	if v, ok := m.Get("from"); ok {
		if from = r.stepIndex(v); from < 0 {
			c.badRequest(p, req, &wire.ValueError{Key: "from", Reason: "run " + strconv.FormatUint(r.id, 10) + " has no step " + quoted(v)})
			return
		}
	}
	plan, code, msg := c.planResume(r, from)
	if code == "" && !c.available {
		code, msg = wire.CodeUnavailable, logNotWritable
	}
	if code != "" {
		c.sendError(p, req, code, msg)
		return
	}
	rec := c.newRecord(recRunResume)
	rec.run, rec.at, rec.why = &runRec{id: r.id, requeues: plan.requeues}, c.now(), strings.Clone(reason)
	if !c.commit(rec) {
		c.sendError(p, req, wire.CodeIllegalTransition, "run "+strconv.FormatUint(r.id, 10)+" cannot be resumed")
		return
	}
	r = c.runs.byID[r.id]
	for _, q := range plan.requeues {
		c.logTransition(c.tasks.get(q.id), plan.from[q.id], q.state, "run resume")
	}
	if len(plan.rerun) > 0 {
		c.log.Warn("run resume re-runs succeeded steps", append(c.askedBy(p), "run_id", r.id,
			"from", r.steps[from].id, "steps", strings.Join(plan.rerun, ","))...)
	}
	c.obs.Admin(OpRequeue, len(plan.requeues))
	c.log.Info("run resumed", append(c.askedBy(p), "run_id", r.id, "requeued", strings.Join(plan.ids, ","), "reason", reason)...)
	b := c.begin(wire.KindRunResumed, req)
	b.Uint("run_id", r.id)
	b.StrK(kState, r.state.String())
	b.Str("requeued", strings.Join(plan.ids, ","))
	c.confirm(p.id, &b)
}

// resumePlan is what a resume requeues.
type resumePlan struct {
	requeues []runRequeue
	ids      []string         // the step ids requeued, in step order
	rerun    []string         // the succeeded ones among them (from=)
	from     map[uint64]State // each requeued task's state before
}

// planResume decides a resume of r, from step from (-1: none), or returns
// the code and text that refuse it. It changes nothing.
func (c *Core) planResume(r *run, from int) (resumePlan, wire.Code, string) {
	var plan resumePlan
	id := strconv.FormatUint(r.id, 10)
	switch r.state {
	case runFailed, runCancelled:
	case runRolledBack, runRollbackFailed:
		return plan, wire.CodeIllegalTransition, "run " + id + " was rolled back: its work was undone"
	default:
		if r.state == runSucceeded {
			return plan, wire.CodeIllegalTransition, "run " + id + " has succeeded; only a failed or cancelled run is resumed"
		}
		return plan, wire.CodeIllegalTransition, "run " + id + " is " + r.state.String() + "; only a failed or cancelled run is resumed"
	}
	if r.compensating {
		// Cancelled mid-rollback: some work was undone, so running steps again is unsound.
		return plan, wire.CodeIllegalTransition, "run " + id + " was (partly) rolled back: its work was undone"
	}
	if live := c.runLiveTasks(r); len(live) > 0 {
		return plan, wire.CodeIllegalTransition, "run " + id + " still has task " + strconv.FormatUint(live[0], 10) +
			" not ended: cancel the run again first"
	}
	n := len(r.steps)
	req := make([]bool, n)
	down := make([]bool, n) // from's step and its dependents
	plan.from = map[uint64]State{}
	var bytes int64
	for i := range r.steps {
		s := &r.steps[i]
		anyDep := false
		for _, d := range s.deps {
			anyDep = anyDep || req[d]
			down[i] = down[i] || down[d]
		}
		down[i] = down[i] || i == from
		switch {
		case down[i]:
			req[i] = true
		case s.st == Failed || s.st == Cancelled:
			// A skipped step stays skipped unless a step it depends on runs again.
			req[i] = !s.skipped || anyDep
		}
		if !req[i] {
			continue
		}
		t := c.tasks.get(r.first + uint64(i))
		if t == nil {
			return plan, wire.CodeIllegalTransition, "step " + s.id + " of run " + id + " is no longer known (retention): it cannot run again"
		}
		q := runRequeue{id: t.id, version: c.nextVersion(t), state: Pending}
		if anyDep {
			q.state = Waiting
		}
		if q.state == Pending && s.refs {
			args, k, miss := fillArgs(s.args, c.lookIn(r))
			if miss != nil {
				return plan, wire.CodeIllegalTransition, miss.Error() + ": resume from the step that makes it (from=" + miss.step + ")"
			}
			if !c.argsFit(s.typ, r.trace, args, int(k), 0, 0) {
				return plan, wire.CodeIllegalTransition, "step " + s.id + ": " + errArgsTooLarge
			}
			q.hasArgs, q.args, q.argKeys = true, args, k
		}
		plan.requeues = append(plan.requeues, q)
		plan.ids = append(plan.ids, s.id)
		plan.from[t.id] = t.state
		if t.state == Succeeded {
			plan.rerun = append(plan.rerun, s.id)
		}
		bytes += t.bytes()
	}
	if c.nonTerminal()+len(plan.requeues) > c.cfg.MaxPending {
		return plan, wire.CodeQueueFull, "queue full: " + strconv.Itoa(c.cfg.MaxPending) + " tasks not yet ended; retry later"
	}
	if limit := int64(c.cfg.MaxPendingBytes); limit >= 0 && c.pendingBytes+bytes > limit {
		return plan, wire.CodeQueueFull, "queue full: the run's tasks would pass --max-pending-bytes; retry later"
	}
	return plan, "", ""
}

// checkRunResume validates a recRunResume.
func (c *Core) checkRunResume(r *record) error {
	x := r.run
	ru := c.runs.byID[x.id]
	if ru == nil {
		return errRunCorrupt("resume of unknown run %d", x.id)
	}
	for _, q := range x.requeues {
		t := c.tasks.get(q.id)
		if t == nil || q.id < ru.first || q.id-ru.first >= uint64(len(ru.steps)) {
			return errRunCorrupt("resume of run %d names task %d, not one of its steps", x.id, q.id)
		}
		if !t.state.Terminal() || q.version <= t.version || (q.state != Pending && q.state != Waiting) {
			return illegal(t, q.state, "run resume of a task not ended, or to a lower version")
		}
	}
	return nil
}

// applyRunResume requeues a run's tasks, as requeue does, in ascending id.
func (c *Core) applyRunResume(r *record) {
	x := r.run
	ru := c.mutRun(x.id)
	ru.resumes++
	c.setRunState(ru, runRunning, r.at)
	for _, q := range x.requeues {
		rq := record{kind: recRequeue, id: q.id, at: r.at, version: q.version, state: q.state, why: r.why}
		c.applyRequeue(&rq)
		if q.hasArgs {
			c.setArgs(q.id, q.args, q.argKeys)
		}
		ref := c.runs.of[q.id]
		ru.steps[ref.step].st, ru.steps[ref.step].skipped = q.state, false
	}
	c.deriveRunState(ru, r.at)
}

// setArgs replaces a task's args (filled-in references), keeping the
// bytes it counts in step.
func (c *Core) setArgs(id uint64, args string, n uint16) {
	t := c.tasks.mut(id)
	if t.state.Terminal() {
		c.retainedBytes -= t.bytes()
		t.args, t.argKeys = args, n
		c.retainedBytes += t.bytes()
		return
	}
	c.pendingBytes -= t.bytes()
	t.args, t.argKeys = args, n
	c.pendingBytes += t.bytes()
}

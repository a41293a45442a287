package core

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/wire"
)

// Requeue (protocol section 8.3) sends a failed or cancelled task back to
// pending. It goes to waiting while some of its dependencies have not ended.
// A waiting task waits for an ended one only when it tolerates it
// (steps.go). Otherwise a failed or cancelled dependency blocks the requeue.
// So does one forgotten before the task ever left waiting, since nobody
// can tell how it ended. So retention and purges strand no waiting task.
// The dependents index stays as section 6 has it.

// maxReasonLen bounds a requeue reason, since it is kept with the task.
const maxReasonLen = 256

// requeueWanted is what a requeue asks, as parsed from its request.
type requeueWanted struct {
	keepAttempts bool
	reason       string
}

// parseRequeue reads keep_attempts and reason, shared by requeue and
// requeue_where.
func parseRequeue(m *wire.Message) (requeueWanted, error) {
	keep, err := m.BoolOr("keep_attempts", false)
	if err != nil {
		return requeueWanted{}, err
	}
	reason := m.Value("reason")
	if len(reason) > maxReasonLen {
		return requeueWanted{}, &wire.ValueError{Key: "reason", Reason: "longer than " + strconv.Itoa(maxReasonLen) + " bytes"}
	}
	// The reason is kept with the task, but the message borrows the read buffer.
	return requeueWanted{keepAttempts: keep, reason: strings.Clone(reason)}, nil
}

// requeuePlan is what a dry run of requeue_where would have requeued so
// far. Later tasks see those as not ended, and as counted in the caps.
type requeuePlan struct {
	ids   map[uint64]bool
	bytes int64
}

// planRequeue counts t into plan when a requeue would take it.
func (c *Core) planRequeue(plan *requeuePlan, t *task, w requeueWanted) bool {
	if _, code, _ := c.requeueTarget(t, w, plan); code != "" {
		return false
	}
	if plan.ids == nil {
		plan.ids = map[uint64]bool{}
	}
	plan.ids[t.id] = true
	plan.bytes += t.bytes() + int64(len(w.reason)-len(t.requeueReason()))
	return true
}

// requeueTarget returns the state a requeue of t leads to, or the error
// code and text that refuse it. It changes nothing. plan, when not nil,
// is a dry run's requeues so far.
func (c *Core) requeueTarget(t *task, w requeueWanted, plan *requeuePlan) (State, wire.Code, string) {
	planned := 0
	var plannedBytes int64
	if plan != nil {
		planned, plannedBytes = len(plan.ids), plan.bytes
	}
	id := strconv.FormatUint(t.id, 10)
	if t.state != Failed && t.state != Cancelled {
		return 0, wire.CodeIllegalTransition, "task " + id + " is " + t.state.String() + ": only a failed or cancelled task is requeued"
	}
	to := Pending
	wf := t.whenFailed()
	failed, forgotten := false, false
	for d := range t.deps().all() {
		switch dt := c.tasks.get(d); {
		case dt == nil && t.flags&flagReleased == 0:
			return 0, wire.CodeIllegalTransition, "dependency " + strconv.FormatUint(d, 10) +
				" of task " + id + " is no longer known, and it never succeeded while the task waited"
		case dt == nil:
			forgotten = true
		case dt.state == Succeeded:
		case plan != nil && plan.ids[d]:
			to = Waiting
		case dt.state.Terminal() && (wf || dt.optional()):
			failed = true // tolerated (steps.go): it does not block
		case dt.state.Terminal():
			return 0, wire.CodeIllegalTransition, "dependency " + strconv.FormatUint(d, 10) + " of task " + id +
				" is " + dt.state.String() + ": requeue it first"
		default:
			to = Waiting
		}
	}
	if wf && to == Pending && !failed && (!forgotten || t.flags&flagDepFailed == 0) {
		return 0, wire.CodeIllegalTransition, "task " + id + " runs only when a dependency failed or was cancelled" +
			" (when=failed), and all its dependencies succeeded: it would be skipped again"
	}
	if c.nonTerminal()+planned >= c.cfg.MaxPending {
		return 0, wire.CodeQueueFull, "queue full: " + strconv.Itoa(c.cfg.MaxPending) + " tasks not yet ended; retry later"
	}
	grow := int64(len(w.reason) - len(t.requeueReason()))
	if limit := int64(c.cfg.MaxPendingBytes); limit >= 0 && c.pendingBytes+plannedBytes+t.bytes()+grow > limit {
		return 0, wire.CodeQueueFull, "queue full: tasks not yet ended hold " + strconv.FormatInt(c.pendingBytes, 10) +
			" bytes, and task " + id + " would pass --max-pending-bytes; retry later"
	}
	if c.requeuedStateSize(t, w.reason) > c.cfg.MaxFrame {
		return 0, wire.CodeBadRequest, "reason: with it the task_state of task " + id + " would exceed the max frame"
	}
	if code, msg := c.runRequeueRefs(t, to); code != "" {
		return 0, code, msg
	}
	return to, "", ""
}

// requeuedStateSize bounds t's task_state once requeued with reason, as
// outTooLarge counts a result's.
func (c *Core) requeuedStateSize(t *task, reason string) int {
	x := t.x.withRequeue(t.requeues()+1, reason)
	probe := *t
	probe.x = x
	n := taskStateBase(&probe, len("cancelled")) + linesSize(t.outs)
	if e := t.errText(); e != "" {
		n += len("\nerror=") + wire.EscapedLen(e)
	}
	if taskStateKeysOf(&probe)+1+int(t.outKeys) > wire.MaxKeys { // 1: error
		return c.cfg.MaxFrame + 1 // too many keys, whatever their size
	}
	return n
}

// requeueTask requeues t, which requeueTarget let through to state to.
// It reports whether the change was made.
func (c *Core) requeueTask(t *task, to State, w requeueWanted) bool {
	attempt := uint32(0)
	if w.keepAttempts {
		attempt = t.attempt
	}
	from := t.state
	r := c.newRecord(recRequeue)
	r.id, r.at, r.version, r.state, r.attempt, r.why = t.id, c.now(), c.nextVersion(t), to, attempt, w.reason
	c.fillRequeue(r)
	if !c.commit(r) {
		return false
	}
	c.logTransition(c.tasks.get(r.id), from, to, "requeued")
	return true
}

// checkRequeue validates a requeue record.
func (c *Core) checkRequeue(r *record) error {
	t := c.tasks.get(r.id)
	if t == nil {
		return fmt.Errorf("%w: requeue of unknown task %d", ErrCorrupt, r.id)
	}
	if t.state != Failed && t.state != Cancelled {
		return illegal(t, r.state, "requeue of a task not failed or cancelled")
	}
	if r.state != Pending && r.state != Waiting {
		return illegal(t, r.state, "requeue to a state other than pending or waiting")
	}
	if r.version <= t.version {
		return illegal(t, r.state, fmt.Sprintf("requeue version %d is not above %d", r.version, t.version))
	}
	return nil
}

// applyRequeue applies a checked requeue record. The task's error and
// outputs stay until its next dispatch, as a failed attempt's do.
func (c *Core) applyRequeue(r *record) {
	c.retainedBytes -= c.tasks.get(r.id).bytes()
	t := c.setState(r.id, r.state, r.at)
	t.version, t.attempt = r.version, r.attempt
	t.flags &^= flagTakenBack | flagRequeued | flagDelayed | flagArmed
	t.dueMs = 0
	t.x = t.x.withRequeue(t.requeues()+1, r.why)
	t.startOff = 0 // the requeued task's next attempt has not started
	c.pendingBytes += t.bytes()
	delete(c.depsMet, t.id)
	c.relink(t)
	if r.state == Waiting {
		t.flags &^= flagReleased
		c.noteDeps(t)
		for d := range t.deps().all() {
			if dt := c.tasks.get(d); dt != nil && !dt.state.Terminal() {
				// An entry left from an earlier wait may still be listed.
				// The second visit finds the task no longer waiting.
				c.dependents.add(d, t.id)
			}
		}
		return
	}
	t.flags |= flagReleased
	c.makePending(t, r.at)
}

// endOf returns the ended task a retention entry names. It returns nil for a
// stale entry, whose task was forgotten, requeued, or ended again since.
func (c *Core) endOf(e qent) *task {
	t := c.tasks.get(e.id)
	if t == nil || !t.state.Terminal() || t.seq != e.ver {
		return nil
	}
	return t
}

// requeueRequest handles `requeue task_id=<n> [keep_attempts] [reason]`.
func (c *Core) requeueRequest(p *peer, m *wire.Message, req string) {
	if !c.requireAdmin(p, m, req) {
		return
	}
	w, err := parseRequeue(m)
	if err != nil {
		c.badRequest(p, req, err)
		return
	}
	t := c.requestedTask(p, m, req)
	if t == nil {
		return
	}
	to, code, msg := c.requeueTarget(t, w, nil)
	if code == "" && !c.available {
		code, msg = wire.CodeUnavailable, logNotWritable
	}
	if code != "" {
		c.sendError(p, req, code, msg)
		return
	}
	from, id := t.state, t.id
	if !c.requeueTask(t, to, w) {
		c.sendError(p, req, wire.CodeIllegalTransition, "task "+strconv.FormatUint(id, 10)+" cannot be requeued")
		return
	}
	t = c.tasks.get(id)
	c.obs.Admin(OpRequeue, 1)
	c.log.Info("task requeued", append(c.askedBy(p), "task_id", id, "from", from.String(), "to", to.String(),
		"version", t.version, "keep_attempts", w.keepAttempts, "reason", w.reason)...)
	b := c.begin(wire.KindRequeued, req)
	b.UintK(kTaskID, id)
	b.StrK(kState, to.String())
	b.UintK(kVersion, t.version)
	c.confirm(p.id, &b)
}

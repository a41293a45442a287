package core

import (
	"fmt"
)

// newRecord returns the scratch record, reset, of the given kind.
func (c *Core) newRecord(k recKind) *record {
	c.rec.reset()
	c.rec.kind = k
	return &c.rec
}

// commit checks r against the rules, hands its encoding to the log and
// applies it. A record that breaks the transition table is refused and
// logged; that is a bug in the decision that built it.
func (c *Core) commit(r *record) bool {
	if err := c.check(r); err != nil {
		c.log.Error("refused illegal change", "err", err, "task_id", r.id, "version", r.version, "executor", r.exec, "record", r.kind.String())
		return false
	}
	if !c.cfg.Unlogged {
		c.recBuf = appendRecord(c.recBuf[:0], r)
		c.lastMark = c.fx.Record(c.recBuf)
	}
	c.mutate(r)
	return true
}

// ReplayRecord applies one log record during recovery.
func (c *Core) ReplayRecord(payload []byte) error {
	var r record
	if err := decodeLogRecord(payload, &r, nil); err != nil {
		return err
	}
	return c.replay(&r)
}

// decodeLogRecord decodes a log record into r.
func decodeLogRecord(payload []byte, r *record, names *interner) error {
	if err := decodeRecordNames(payload, r, names); err != nil {
		return err
	}
	if r.kind >= snapMeta && r.kind <= snapTask || r.kind == snapRunMeta || r.kind == snapRun {
		return fmt.Errorf("%w: snapshot entry %s in the log", ErrCorrupt, r.kind)
	}
	return nil
}

// replay applies a decoded log record during recovery.
func (c *Core) replay(r *record) error {
	c.finishLoad()
	if err := c.check(r); err != nil {
		return err
	}
	c.mutate(r)
	return nil
}

// illegal describes a refused transition.
func illegal(t *task, to State, why string) error {
	return fmt.Errorf("illegal transition of task %d version %d from %s to %s (executor %q): %s",
		t.id, t.version, t.state, to, t.execID, why)
}

// check validates r against the current state without changing anything.
func (c *Core) check(r *record) error {
	var t *task
	switch r.kind {
	case recExecReg:
		if !validExecutorID(r.exec) || r.slots < 1 || r.slots > 65536 {
			return fmt.Errorf("%w: bad executor registration %q", ErrCorrupt, r.exec)
		}
		return nil
	case recExecGone:
		e := c.execs[r.exec]
		if e == nil {
			return fmt.Errorf("%w: unknown executor %q leaves", ErrCorrupt, r.exec)
		}
		if e.tasks.len() != 0 {
			return fmt.Errorf("executor %q leaves with %d tasks", r.exec, e.tasks.len())
		}
		return nil
	case recDrop:
		for _, id := range r.ids {
			if t := c.tasks.get(id); t == nil || !t.state.Terminal() {
				return fmt.Errorf("%w: drop of task %d that is not terminal", ErrCorrupt, id)
			}
		}
		return nil
	case recSkipIDs:
		if r.nextID < c.nextID {
			return fmt.Errorf("%w: next task id %d would go back from %d", ErrCorrupt, r.nextID, c.nextID)
		}
		return nil
	case recEpoch:
		if r.epoch < c.nextEpoch || r.epoch > maxEpoch {
			return fmt.Errorf("%w: epoch %d where epoch %d or later must come", ErrCorrupt, r.epoch, c.nextEpoch)
		}
		return nil
	case recRequeue:
		return c.checkRequeue(r)
	case recStateFix, recPause, recExecTypes:
		return c.checkOps(r)
	case recSched, recSchedOp:
		return c.checkSched(r)
	case recRun, recRunComp, recRunResume, recRunCancel, recRunDrop:
		return c.checkRunRecord(r)
	case recNew:
		if r.id < c.nextID || c.tasks.get(r.id) != nil {
			return fmt.Errorf("%w: task id %d reused (next is %d)", ErrCorrupt, r.id, c.nextID)
		}
		if r.state != Pending && r.state != Waiting {
			return fmt.Errorf("%w: new task %d in state %s", ErrCorrupt, r.id, r.state)
		}
		return nil
	}
	if t = c.tasks.get(r.id); t == nil {
		return fmt.Errorf("%w: %s record for unknown task %d", ErrCorrupt, r.kind, r.id)
	}
	to := targetState(r)
	switch r.kind {
	case recArm:
		if t.state != Retrying || t.flags&flagArmed != 0 {
			return illegal(t, Retrying, "arm of a task not waiting in retrying")
		}
		return nil
	case recDispatch:
		if t.state == Pending && t.flags&flagDelayed != 0 {
			return illegal(t, to, "its delay has not ended")
		}
		if r.version <= t.version {
			// Above the last, not the last plus one: a new epoch jumps.
			return illegal(t, to, fmt.Sprintf("dispatch version %d is not above %d", r.version, t.version))
		}
		if c.execNamed(r) == nil {
			return illegal(t, to, "unknown executor "+r.exec)
		}
	case recStart:
		if r.version != t.version {
			return illegal(t, to, fmt.Sprintf("started version %d is not current", r.version))
		}
	case recReady:
		if t.state == Pending { // a delayed task's delay ended
			if t.flags&flagDelayed == 0 || r.at < t.dueMs {
				return illegal(t, to, "pending task not waiting for its delay")
			}
			return nil
		}
	}
	if !Legal(t.state, to) {
		return illegal(t, to, "not in the transition table")
	}
	return nil
}

// targetState is the state a task record moves its task to.
func targetState(r *record) State {
	switch r.kind {
	case recDispatch:
		return Dispatched
	case recStart:
		return Running
	case recBack, recReady:
		return Pending
	case recRetry, recArm:
		return Retrying
	case recEnd:
		return r.state
	}
	return 0
}

// mutate applies a checked record. Every index (queues, timers, executor
// assignments, counts, retention, dependents, keys) is kept here, so that
// live decisions and replay build the same state.
func (c *Core) mutate(r *record) {
	switch r.kind {
	case recNew:
		c.applyNew(r)
	case recDispatch:
		c.applyDispatch(r)
	case recStart:
		t := c.setState(r.id, Running, r.at)
		t.startOff = startOffset(t.createdMs, r.at)
		t.dueMs = r.due
		if r.due > 0 {
			c.addTimer(timer{at: r.due, id: t.id, ver: t.version, kind: timerDue})
		}
	case recBack:
		c.detach(r.id)
		t := c.setState(r.id, Pending, r.at)
		t.flags = t.flags | flagTakenBack | flagRequeued
		t.dueMs = 0
		c.enqueue(t)
	case recRetry:
		c.detach(r.id)
		t := c.setState(r.id, Retrying, r.at)
		t.flags |= flagTakenBack
		c.setPendingOutcome(t, r.errText, r.out, r.outKeys)
		t.seq = c.nextSeq()
		c.arm(t, r.due)
	case recArm:
		c.arm(c.tasks.mut(r.id), r.due)
	case recReady:
		c.applyReady(r)
	case recEnd:
		c.applyEnd(r)
		c.runTaskChanged(r.id, r.at)
	case recRequeue:
		c.applyRequeue(r)
		if r.filled {
			c.setArgs(r.id, r.args, r.argKeys)
		}
		c.runTaskChanged(r.id, r.at)
	case recRun, recRunComp, recRunResume, recRunCancel, recRunDrop:
		c.applyRunRecord(r)
	case recDrop:
		for _, id := range r.ids {
			c.forget(id)
		}
	case recSkipIDs:
		c.nextID = r.nextID
	case recEpoch:
		c.epoch, c.nextEpoch = r.epoch, r.epoch+1
	case recExecReg:
		c.applyExecReg(r)
	case recStateFix:
		c.applyStateFix(r)
	case recPause:
		c.applyPause(r.typ, r.on)
	case recExecTypes:
		c.applyExecTypes(r)
	case recSched:
		c.applySched(r)
	case recSchedOp:
		c.applySchedOp(r)
	case recExecGone:
		e := c.execs[r.exec]
		e.peer = 0
		c.refreshHeaps(e)
		for _, tt := range e.types {
			c.releaseType(tt)
		}
		c.regBytes -= e.regBytes
		c.dropDescs(e)
		delete(c.execs, r.exec)
		// The liveness heap keeps e until its timeout passes. Without its
		// types, that costs a small struct rather than its 1,024 types.
		e.types, e.entries = nil, nil
	}
}

func (c *Core) nextSeq() uint64 {
	c.seq++
	return c.seq
}

// setState moves a task to s, keeping the counts; it returns the writable
// task.
func (c *Core) setState(id uint64, s State, at int64) *task {
	t, from := c.tasks.setState(id, s)
	c.counts[from]--
	c.counts[s]++
	t.typ.counts[from]--
	t.typ.counts[s]++
	c.noteEnd(id, from, s)
	c.leftMs = t.updatedMs // when the state it leaves began: logTransition's in_state_ms
	t.updatedMs = at
	if s != Running && len(c.progs) > 0 {
		delete(c.progs, id) // progress belongs to one dispatch while it runs
	}
	return t
}

func (c *Core) applyNew(r *record) {
	st := c.tasks.insert(task{id: r.id, createdMs: r.at, updatedMs: r.at, state: r.state,
		args: r.args, argKeys: r.argKeys, x: taskExtra{fields: r.fields}.shared()})
	c.keepV1(r, st)
	c.nextID = max(c.nextID, r.id+1)
	c.counts[r.state]++
	st.typ.counts[r.state]++
	c.pendingBytes += st.bytes()
	if r.key != "" {
		c.keys[r.key] = r.id
	}
	if r.state == Waiting {
		for _, d := range r.deps {
			switch dt := c.tasks.get(d); {
			case dt == nil:
			case !dt.state.Terminal():
				c.dependents.add(d, r.id)
			case depFailed(dt.state):
				c.tolerate(st, dt)
			}
		}
		return
	}
	if st.whenFailed() {
		c.noteDeps(st) // released at once: a dependency failed
	}
	st.flags |= flagReleased
	c.makePending(st, r.at)
}

func (c *Core) applyDispatch(r *record) {
	old := c.tasks.get(r.id)
	c.unqueue(old)
	t := c.setState(r.id, Dispatched, r.at)
	if r.attempt > t.attempt && (t.outs != "" || t.errText() != "") {
		// A failed attempt's outputs are kept until the next attempt.
		c.setPendingOutcome(t, "", "", 0)
	}
	t.version, t.attempt = r.version, r.attempt
	t.startOff = 0
	e := c.execNamed(r)
	t.execID = e.id
	t.flags &^= flagTakenBack | flagRequeued
	t.dueMs = r.due
	if r.due > 0 {
		c.addTimer(timer{at: r.due, id: t.id, ver: t.version, kind: timerDue})
	}
	e.tasks.set(t.id, assignment{ver: t.version})
	e.load++
	c.refreshHeaps(e)
}

// detach frees the executor slot held by a dispatched or running task.
func (c *Core) detach(id uint64) {
	t := c.tasks.get(id)
	e := c.execs[t.execID]
	if e == nil {
		return
	}
	if e.tasks.del(id) {
		e.load--
		c.activeLeft(t.typ)
		c.refreshHeaps(e)
		c.queueIdle(e)
	}
}

func (c *Core) applyReady(r *record) {
	from := c.tasks.get(r.id).state
	t := c.setState(r.id, Pending, r.at)
	// A retry's next attempt has not started: run_ms must not show the
	// failed one's start if the task ends before it (section 8.8).
	t.startOff = 0
	if from == Retrying {
		c.disarm(t)
		t.dueMs = 0
	}
	if from == Waiting {
		t.flags |= flagReleased
	}
	if r.filled {
		c.setArgs(r.id, r.args, r.argKeys)
		t = c.tasks.get(r.id)
	}
	c.makePending(t, r.at)
}

func (c *Core) applyEnd(r *record) {
	old := c.tasks.get(r.id)
	from := old.state
	switch from {
	case Dispatched, Running:
		c.detach(r.id)
	case Pending:
		if old.flags&flagDelayed == 0 {
			c.unqueue(old)
		}
	}
	t := c.setState(r.id, r.state, r.at)
	c.disarm(t)
	t.flags &^= flagDelayed
	t.flags |= r.flags & flagTakenBack
	t.dueMs = 0
	c.pendingBytes -= t.bytes()
	t.setOutcome(r.errText, r.out, r.outKeys)
	c.retainedBytes += t.bytes()
	t.seq = c.nextSeq()
	// The entry names this end: a task requeued and ended again leaves
	// its earlier entry behind, stale (endOf).
	c.retention.push(qent{id: t.id, ver: t.seq})
	for _, p := range r.sets {
		c.writeState(p.k, p.v)
	}
	if r.stateVer != 0 {
		c.stateVer = r.stateVer
		c.stateMark = c.lastMark
	}
	c.released = c.dependents.take(r.id, c.released[:0])
	if depFailed(r.state) && len(c.released) > 0 {
		c.noteEnded(t)
	}
	if from == Waiting && !c.dependents.empty() {
		for d := range t.deps().all() {
			c.dependents.ended(d, c.isWaiting)
		}
	}
}

// setPendingOutcome sets the outcome of a task not yet ended, keeping
// pendingBytes in step with what it holds.
func (c *Core) setPendingOutcome(t *task, errText, out string, outKeys uint16) {
	c.pendingBytes -= t.bytes()
	t.setOutcome(errText, out, outKeys)
	c.pendingBytes += t.bytes()
}

func (c *Core) isWaiting(id uint64) bool {
	t := c.tasks.get(id)
	return t != nil && t.state == Waiting
}

// forget drops a terminal task (retention).
func (c *Core) forget(id uint64) {
	t := c.tasks.get(id)
	if k := t.key(); k != "" && c.keys[k] == id {
		delete(c.keys, k)
	}
	c.counts[t.state]--
	t.typ.counts[t.state]--
	c.retainedBytes -= t.bytes()
	c.waiters.drop(id)
	if len(c.depsMet) > 0 {
		delete(c.depsMet, id)
	}
	c.releaseType(t.typ)
	c.tasks.remove(id)
	c.runTaskForgotten(id)
}

func (c *Core) writeState(k, v string) {
	c.ownState()
	c.state[k] = v
}

// ownState copies the shared state when a frozen snapshot holds it, so that
// a change does not reach the snapshot.
func (c *Core) ownState() {
	if c.stateShared {
		clone := make(map[string]string, len(c.state)+1)
		for kk, vv := range c.state {
			clone[kk] = vv
		}
		c.state = clone
		c.stateShared = false
	}
}

package core

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// Snapshot is a frozen copy of the core's durable state. It is cheap to
// take on the core's goroutine. Freeze copies the chunk directory and marks
// the shared-state map shared. WriteTo writes it from any goroutine.
type Snapshot struct {
	tasks    frozenTable
	state    map[string]string
	stateTok *uint64
	meta     record
	execs    []record
	nextID   uint64
	paused   []string // the paused task types, sorted
	scheds   []record // the schedules' entries, by name
	runs     frozenRuns
}

// Freeze captures the durable state. The core goes on changing, but the
// snapshot does not see it.
func (c *Core) Freeze() *Snapshot {
	c.finishLoad()
	if !c.stateShared || c.stateTok == nil {
		c.stateTok = new(uint64)
	}
	s := &Snapshot{tasks: c.tasks.freeze(), state: c.state, stateTok: c.stateTok, nextID: c.nextID}
	c.stateShared = true
	s.meta = record{kind: snapMeta, nextID: c.nextID, stateVer: c.stateVer, seqCounter: c.seq, regSeq: c.regSeq,
		epoch: c.nextEpoch}
	names := make([]string, 0, len(c.execs))
	for id := range c.execs {
		names = append(names, id)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(c.execs[a].regSeq, c.execs[b].regSeq) })
	for _, id := range names {
		e := c.execs[id]
		r := record{kind: recExecReg, exec: e.id, slots: uint64(e.slots)}
		for _, tt := range e.types {
			r.types = append(r.types, tt.name)
		}
		s.execs = append(s.execs, r)
	}
	s.paused = slices.Sorted(maps.Keys(c.paused))
	s.scheds = c.scheduleEntries()
	s.runs = c.freezeRuns()
	return s
}

// writePaused streams one pause entry per paused type, then one entry
// per schedule.
func (s *Snapshot) writePaused(buf []byte, add func(p []byte) error) error {
	for _, name := range s.paused {
		buf = appendRecord(buf[:0], &record{kind: recPause, typ: name, on: true})
		if err := add(buf); err != nil {
			return err
		}
	}
	for i := range s.scheds {
		buf = appendRecord(buf[:0], &s.scheds[i])
		if err := add(buf); err != nil {
			return err
		}
	}
	return nil
}

// WriteTo streams the snapshot's entries to add, in an order LoadEntry
// accepts. It may run on any goroutine, concurrently with the core.
func (s *Snapshot) WriteTo(add func(payload []byte) error) error {
	var buf []byte
	emit := func(r *record) error {
		buf = appendRecord(buf[:0], r)
		return add(buf)
	}
	if err := emit(&s.meta); err != nil {
		return err
	}
	keys := slices.Sorted(maps.Keys(s.state))
	for _, k := range keys {
		if err := emit(&record{kind: snapState, key: k, args: s.state[k]}); err != nil {
			return err
		}
	}
	for i := range s.execs {
		if err := emit(&s.execs[i]); err != nil {
			return err
		}
	}
	if err := s.writePaused(buf, add); err != nil {
		return err
	}
	if err := s.runs.write(buf, add); err != nil {
		return err
	}
	var err error
	var r record
	s.tasks.each(func(t *task) bool {
		taskEntry(t, &r)
		err = emit(&r)
		return err == nil
	})
	return err
}

// Tasks returns the number of tasks in the snapshot.
func (s *Snapshot) Tasks() int {
	n := 0
	for _, ch := range s.tasks.chunks {
		n += int(ch.live)
	}
	return n
}

// taskEntry fills r with the snapshot entry of t. entryV1 copies the v1
// fields (v1codec.go).
func taskEntry(t *task, r *record) {
	out, n := t.out()
	deps := r.deps[:0] // kept from the entry before: the ids are decoded into it
	*r = record{kind: snapTask, id: t.id, created: t.createdMs, at: t.updatedMs, seq: t.seq, version: t.version,
		attempt: t.attempt, state: t.state, flags: t.flags, exec: t.execID, argKeys: t.argKeys, args: t.args,
		errText: t.errText(), outKeys: uint16(n), out: out, deps: deps,
		requeues: t.requeues(), why: t.requeueReason(), fields: *t.fields(), startOff: t.startOff}
	entryV1(t, r)
}

// LoadEntry loads one snapshot entry into an empty core, during recovery,
// before any log record.
func (c *Core) LoadEntry(payload []byte) error {
	var r record
	if err := decodeRecord(payload, &r); err != nil {
		return err
	}
	return c.loadRecord(&r)
}

// loadRecord loads one decoded snapshot entry (see LoadEntry).
func (c *Core) loadRecord(r *record) error {
	c.loading = true
	switch r.kind {
	case snapMeta:
		c.nextID, c.stateVer, c.seq = r.nextID, r.stateVer, r.seqCounter
		c.regSeq, c.nextEpoch = r.regSeq, r.epoch
	case snapState:
		c.state[r.key] = r.args
	case recExecReg:
		seq := c.regSeq
		c.applyExecReg(r)
		c.regSeq = seq // restore the counter from meta; order is kept by entry order
		c.execs[r.exec].regSeq = uint64(len(c.execs))
	case recPause:
		if r.typ == "" || !r.on {
			return fmt.Errorf("%w: pause entry of type %q paused=%v in a snapshot", ErrCorrupt, r.typ, r.on)
		}
		c.applyPause(r.typ, true)
	case recSched:
		if err := c.checkSched(r); err != nil {
			return err
		}
		c.applySched(r)
	case snapRunMeta, snapRun:
		return c.loadRun(r)
	case snapTask:
		if c.tasks.get(r.id) != nil || r.id == 0 {
			return fmt.Errorf("%w: snapshot task %d twice", ErrCorrupt, r.id)
		}
		t := c.tasks.insert(task{id: r.id, createdMs: r.created, updatedMs: r.at, seq: r.seq,
			version: r.version, attempt: r.attempt, state: r.state, flags: r.flags,
			execID: r.exec, args: r.args, argKeys: r.argKeys, outs: r.out, outKeys: r.outKeys, startOff: r.startOff,
			x: taskExtra{errText: r.errText, requeues: r.requeues, reason: r.why, fields: r.fields}.shared()})
		c.keepV1(r, t)
		c.counts[t.state]++
		t.typ.counts[t.state]++
		c.nextID = max(c.nextID, r.id+1)
	default:
		return fmt.Errorf("%w: %s entry in a snapshot", ErrCorrupt, r.kind)
	}
	return nil
}

// finishLoad rebuilds every index from the tasks loaded from a snapshot.
// It rebuilds queues in the order tasks became pending, and timers. It
// rebuilds executor assignments, retention in end order, and the retry line.
// It rebuilds dependents, keys and the bytes tasks hold.
func (c *Core) finishLoad() {
	if !c.loading {
		return
	}
	c.loading = false
	c.tasks.trimSpare()
	// Sized up front, since growing slices of a million pointers costs a fifth
	// of a restart's CPU.
	pending := make([]*task, 0, c.counts[Pending])
	terminal := make([]*task, 0, c.counts[Succeeded]+c.counts[Failed]+c.counts[Cancelled])
	var waitingRetry []*task
	c.tasks.scan(0, 0, func(t *task) bool {
		if t.state.Terminal() {
			c.retainedBytes += t.bytes()
		} else {
			c.pendingBytes += t.bytes()
		}
		switch {
		case t.state == Pending && t.flags&flagDelayed == 0:
			pending = append(pending, t)
		case t.state.Terminal():
			terminal = append(terminal, t)
		case t.state == Retrying && t.flags&flagArmed == 0:
			waitingRetry = append(waitingRetry, t)
		}
		if t.dueMs > 0 && !t.state.Terminal() {
			c.addTimer(timer{at: t.dueMs, id: t.id, ver: t.version, kind: timerDue})
		}
		if t.state == Retrying && t.flags&flagArmed != 0 {
			c.armed++
		}
		if k := t.key(); k != "" {
			c.keys[k] = t.id
		}
		if t.state == Dispatched || t.state == Running {
			e := c.execs[t.execID]
			if e == nil { // registry lost it: keep the task's dispatch reachable
				c.applyExecReg(&record{kind: recExecReg, exec: t.execID, slots: 1})
				e = c.execs[t.execID]
			}
			e.tasks.set(t.id, assignment{ver: t.version})
			e.load++
		}
		if t.state == Waiting {
			for d := range t.deps().all() {
				if dt := c.tasks.get(d); dt != nil && !dt.state.Terminal() {
					c.dependents.add(d, t.id)
				}
			}
		}
		return true
	})
	bySeq := func(a, b *task) int { return cmp.Compare(a.seq, b.seq) }
	slices.SortFunc(pending, bySeq)
	reserveQueues(pending)
	for _, t := range pending {
		t.typ.enqueue(t)
		t.typ.pending++
		c.markDirty(t.typ)
	}
	slices.SortFunc(terminal, bySeq)
	for _, t := range terminal {
		c.retention.push(qent{id: t.id, ver: t.seq})
	}
	slices.SortFunc(waitingRetry, bySeq)
	for _, t := range waitingRetry {
		c.retryWait.push(qent{id: t.id, ver: t.version})
	}
	c.finishRunsLoad()
}

// reserveQueues sizes each queue once for the tasks about to be queued,
// rather than doubling it about twenty times for a million.
func reserveQueues(pending []*task) {
	type queueOf struct {
		tt *taskType
		p  uint8
	}
	need := map[queueOf]int{}
	for _, t := range pending {
		need[queueOf{t.typ, t.priority}]++
	}
	for q, n := range need {
		if q.tt.queues[q.p] == nil {
			q.tt.queues[q.p] = new(fifo)
		}
		q.tt.queues[q.p].reserve(n)
	}
}

// Recovered ends recovery. Every executor counts as disconnected and seen
// now. Every dispatched or running task waits one heartbeat timeout for its
// executor to register and list it in running= (spec section 7).
func (c *Core) Recovered() {
	c.finishLoad()
	c.recountState()
	now := c.now()
	c.startMs = now
	deadline := now + c.cfg.HeartbeatTimeout.Milliseconds()
	restored := 0
	for _, e := range c.execs {
		e.peer = 0
		e.lastSeen = now
		c.watchLiveness(e)
		for id, a := range e.tasks.all() {
			a.restored = true
			c.addTimer(timer{at: deadline, id: id, ver: a.ver, kind: timerRestored})
			restored++
		}
	}
	c.queueIdleAll()
	c.log.Info("recovered", "tasks", c.tasks.count, "next_task_id", c.nextID, "state_version", c.stateVer,
		"executors", len(c.execs), "dispatches_awaiting_executors", restored)
	c.settleWaiting()
	c.runsRecovered()
	c.warnTaskBytes() // after settling: a waiting task cancelled there holds no pending bytes
}

// settleWaiting releases or cancels, after recovery, the waiting tasks
// whose dependencies ended before the crash. A task's end and the release
// or cancel of each of its dependents are separate records. A crash, or a
// torn tail cut off, can keep the end and lose some of the rest. A waiting
// task is followed only when a dependency ends. So nothing would ever move
// those again. Their records are logged like any others.
func (c *Core) settleWaiting() {
	if c.counts[Waiting] == 0 {
		return
	}
	type stranded struct {
		id  uint64
		v   verdict
		why string // the end's error: the dependency that cancels it, or skipped
	}
	var found []stranded
	c.tasks.scan(0, Waiting, func(t *task) bool {
		switch v, blocker := c.depsVerdict(t); v {
		case cancelIt:
			found = append(found, stranded{t.id, v, "dependency " + strconv.FormatUint(blocker.id, 10) + " " + blocker.state.String()})
		case releaseIt, skipIt:
			found = append(found, stranded{t.id, v, errSkipped})
		}
		return true
	})
	released, cancelled := 0, 0
	for _, s := range found {
		t := c.tasks.get(s.id)
		if t == nil || t.state != Waiting { // cancelled meanwhile, down a chain
			continue
		}
		switch s.v {
		case releaseIt:
			if c.releaseWaiting(s.id, releaseWhy(t)+" before a restart") {
				released++
			}
			continue
		case cancelIt:
			if c.endTask(s.id, Cancelled, s.why, "", 0, s.why) {
				cancelled++
			}
		case skipIt:
			if c.endTask(s.id, Cancelled, errSkipped, "", 0, "skipped: every dependency succeeded before a restart (when=failed)") {
				cancelled++
			}
		}
	}
	if released+cancelled > 0 {
		c.log.Warn("waiting tasks whose dependencies ended before the restart moved on",
			"released", released, "cancelled", cancelled)
	}
}

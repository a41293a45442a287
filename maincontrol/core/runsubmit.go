package core

import (
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/wire"
)

// Config defaults of runs (protocol section 8.10, retention and bounds).
const (
	DefaultMaxRuns     = 10_000
	DefaultMaxRunBytes = 64 << 20
)

// RunSubmitted is what SubmitRun made, or found under the run's key.
type RunSubmitted struct {
	RunID     uint64
	FirstTask uint64 // step i's task id is FirstTask+i
	Steps     int
	Duplicate bool
}

// runSubmit handles `run_submit`.
func (c *Core) runSubmit(p *peer, m *wire.Message, req string) {
	wait, err := m.BoolOr("wait", false)
	if err != nil {
		c.badRequest(p, req, err)
		return
	}
	if wait && !c.runWaitRoom(p, req) {
		return
	}
	// A known key is answered before the steps are checked, as submit's.
	if key, has := m.Get("key"); has && key != "" {
		if strings.HasPrefix(key, schedKeyPrefix) {
			c.badRequest(p, req, errSchedKey)
			return
		}
		if id, ok := c.runs.byKey[key]; ok {
			c.answerRunSubmit(p, req, c.runs.byID[id], true, wait)
			return
		}
	}
	spec, err := c.ParseRunSpec(m)
	if err != nil {
		c.badRequest(p, req, err)
		return
	}
	if sz := c.runStateMax(spec, req); sz > c.cfg.MaxFrame {
		c.sendError(p, req, wire.CodeBadRequest, "run too large: its run_state could take "+strconv.Itoa(sz)+
			" bytes, past max_frame "+strconv.Itoa(c.cfg.MaxFrame))
		return
	}
	if limit := c.cfg.MaxPendingPerConn; limit > 0 && p.pending+spec.Steps() > limit {
		c.sendError(p, req, wire.CodeQueueFull, "queue full for this connection: "+strconv.Itoa(p.pending)+
			" of its tasks have not ended, and this run makes "+strconv.Itoa(spec.Steps())+
			", past --max-pending-per-conn "+strconv.Itoa(limit)+"; retry when some end")
		return
	}
	got, er := c.SubmitRun(spec)
	if er != nil {
		c.sendError(p, req, er.Code, er.Message)
		return
	}
	if !got.Duplicate {
		for i := range got.Steps {
			c.submitted(p, got.FirstTask+uint64(i))
		}
	}
	c.answerRunSubmit(p, req, c.runs.byID[got.RunID], got.Duplicate, wait)
}

// answerRunSubmit sends run_submitted, and makes p wait for run_done.
func (c *Core) answerRunSubmit(p *peer, req string, r *run, dup, wait bool) {
	b := c.begin(wire.KindRunSubmitted, req)
	b.Uint("run_id", r.id)
	if dup {
		b.BoolK(kDuplicate, true)
	}
	ids := make([]byte, 0, len(r.steps)*8)
	for i := range r.steps {
		if i > 0 {
			ids = append(ids, ',')
		}
		ids = strconv.AppendUint(ids, r.first+uint64(i), 10)
	}
	b.Str("task_ids", string(ids))
	c.confirm(p.id, &b)
	if !wait {
		return
	}
	if r.state.ended() {
		c.sendRunDone(p.id, req, r)
		return
	}
	c.addRunWait(p, r.id, req)
}

// SubmitRun makes the run spec describes, with its step tasks, in one
// record; or, when its key names a known run, answers that run. The
// error carries the protocol's code (queue_full, unavailable, ...).
func (c *Core) SubmitRun(spec *RunSpec) (RunSubmitted, *wire.ErrorReply) {
	if spec.Key != "" {
		if id, ok := c.runs.byKey[spec.Key]; ok {
			r := c.runs.byID[id]
			return RunSubmitted{RunID: id, FirstTask: r.first, Steps: len(r.steps), Duplicate: true}, nil
		}
	}
	if !c.available {
		return RunSubmitted{}, &wire.ErrorReply{Code: wire.CodeUnavailable, Message: logNotWritable}
	}
	n := len(spec.steps)
	if c.nonTerminal()+n > c.cfg.MaxPending {
		return RunSubmitted{}, &wire.ErrorReply{Code: wire.CodeQueueFull, Message: "queue full: " +
			strconv.Itoa(c.cfg.MaxPending) + " tasks not yet ended, and this run makes " + strconv.Itoa(n) + "; retry later"}
	}
	if limit := int64(c.cfg.MaxPendingBytes); limit >= 0 && c.pendingBytes+spec.tbytes > limit {
		code := wire.CodeQueueFull
		if spec.tbytes > limit {
			code = wire.CodeBadRequest
		}
		return RunSubmitted{}, &wire.ErrorReply{Code: code, Message: "run too large for now: its tasks would hold " +
			strconv.FormatInt(spec.tbytes, 10) + " bytes, past --max-pending-bytes " + strconv.FormatInt(limit, 10)}
	}
	steps := make([]runStep, n)
	for i := range spec.steps {
		steps[i] = spec.steps[i].step
	}
	rb := runBytesOf(&run{name: spec.Name, key: spec.Key, trace: spec.Trace, steps: steps})
	if rb > int64(c.cfg.MaxRunBytes) {
		return RunSubmitted{}, &wire.ErrorReply{Code: wire.CodeBadRequest, Message: "run too large: it holds " +
			strconv.FormatInt(rb, 10) + " bytes, more than --max-run-bytes " + strconv.Itoa(c.cfg.MaxRunBytes)}
	}
	if c.runs.notEnd >= c.cfg.MaxRuns || c.runs.notEndB+rb > int64(c.cfg.MaxRunBytes) {
		return RunSubmitted{}, &wire.ErrorReply{Code: wire.CodeQueueFull, Message: "queue full: the runs not ended reach --max-runs " +
			strconv.Itoa(c.cfg.MaxRuns) + " or --max-run-bytes " + strconv.Itoa(c.cfg.MaxRunBytes) + "; retry later"}
	}
	newTypes := 0
	for i := range steps {
		if c.types[steps[i].typ] == nil {
			newTypes++
		}
	}
	if newTypes > 0 && len(c.types)+newTypes > c.cfg.MaxTaskTypes {
		return RunSubmitted{}, &wire.ErrorReply{Code: wire.CodeQueueFull, Message: "queue full: " +
			strconv.Itoa(len(c.types)) + " task types are known, the most; retry later"}
	}
	now := c.now()
	r := c.newRecord(recRun)
	x := &runRec{id: c.runs.nextID, name: spec.Name, key: spec.Key, trace: spec.Trace, first: c.nextID}
	r.run, r.at = x, now
	x.steps = make([]runRecStep, n)
	for i := range spec.steps {
		st, rs := &spec.steps[i], &x.steps[i]
		rs.s, rs.fields = st.step, st.sub.fields
		rs.due = addMs(now, st.sub.delayMs)
		rs.state = Pending
		if len(st.step.deps) > 0 {
			rs.state = Waiting
		}
		if !st.step.refs {
			rs.args, rs.argKeys, _ = fillArgs(st.step.args, nil)
		}
	}
	if !c.commit(r) {
		return RunSubmitted{}, &wire.ErrorReply{Code: wire.CodeBadRequest, Message: "run refused"}
	}
	for i := range n {
		t := c.tasks.get(x.first + uint64(i))
		c.logTransition(t, 0, t.state, "run_submit")
	}
	c.log.Info("run submitted", "run_id", x.id, "name", clipText(x.name), "steps", n, "first_task_id", x.first)
	return RunSubmitted{RunID: x.id, FirstTask: x.first, Steps: n}, nil
}

// checkRun validates a recRun against the state.
func (c *Core) checkRun(r *record) error {
	x := r.run
	if x.id < c.runs.nextID || c.runs.byID[x.id] != nil {
		return errRunCorrupt("run id %d reused (next is %d)", x.id, c.runs.nextID)
	}
	if len(x.steps) == 0 || x.first < c.nextID {
		return errRunCorrupt("run %d: no steps, or first task id %d below %d", x.id, x.first, c.nextID)
	}
	for i := range x.steps {
		st := &x.steps[i]
		if st.state != Pending && st.state != Waiting {
			return errRunCorrupt("run %d step %d created %s", x.id, i, st.state)
		}
		for _, d := range st.s.deps {
			if int(d) >= i {
				return errRunCorrupt("run %d step %d depends on a later step %d", x.id, i, d)
			}
		}
	}
	return nil
}

// applyRun makes a run and its step tasks.
func (c *Core) applyRun(r *record) {
	x := r.run
	for i := range x.steps {
		st := &x.steps[i]
		nr := record{kind: recNew, id: x.first + uint64(i), typ: st.s.typ, priority: st.s.priority,
			maxAttempts: st.s.maxAtt, timeoutMs: st.s.timeout, at: r.at, due: st.due, state: st.state,
			trace: x.trace, argKeys: st.argKeys, args: st.args, fields: st.fields}
		for _, d := range st.s.deps {
			nr.deps = append(nr.deps, x.first+uint64(d))
		}
		c.applyNew(&nr)
	}
	ru := &run{id: x.id, name: x.name, key: x.key, trace: x.trace, createdMs: r.at, updatedMs: r.at,
		first: x.first, state: runRunning, steps: make([]runStep, len(x.steps))}
	for i := range x.steps {
		ru.steps[i] = x.steps[i].s
		ru.steps[i].st = x.steps[i].state
	}
	ru.bytes = runBytesOf(ru)
	c.addRun(ru)
}

// runStateMax bounds the run_state of the run spec describes: every
// number at 20 digits, every error at its cut.
func (c *Core) runStateMax(spec *RunSpec, req string) int {
	const num = 20
	errMax := 2*maxRunErrShown + len("...")
	n := len("type=run_state\nreq=") + wire.EscapedLen(req) + len("\nrun_id=") + num +
		len("\nname=") + wire.EscapedLen(spec.Name) + len("\nkey=") + wire.EscapedLen(spec.Key) +
		len("\nstate=rollback_failed") + len("\nsteps=") + num + len("\ncreated_ms=\nupdated_ms=\nresumes=") + 3*num +
		len("\ntrace_id=") + wire.EscapedLen(spec.Trace)
	for i := range spec.steps {
		s := &spec.steps[i].step
		pre := len("\nstep.") + len(strconv.Itoa(i)) + 1
		n += pre + len("id=") + len(s.id) +
			pre + len("task_id=") + num +
			pre + len("state=dispatched") +
			pre + len("error=") + errMax +
			pre + len("optional=true") + pre + len("when=failed") +
			pre + len("comp_task_id=") + num + pre + len("comp_state=dispatched") +
			pre + len("comp_error=") + errMax
	}
	return n
}

// clipError cuts an error for run_state on a UTF-8 boundary.
func clipError(s string) string {
	if len(s) <= maxRunErrShown {
		return s
	}
	cut := maxRunErrShown
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return strings.Clone(s[:cut]) + "..."
}

package core

import "fmt"

// The records and snapshot entries of runs (records.go has the rules).
// A step is written as one length-prefixed block, so that a field added
// to steps goes at the end of its block and older binaries skip it.

// runRec is the part of a record that the run kinds use.
type runRec struct {
	id    uint64 // the run
	name  string // recRun
	key   string
	trace string
	first uint64
	steps []runRecStep
	// recRunComp: the step compensated, its task (0 when none could be
	// made) and the task's fields; compErr why none could be made.
	step    uint64
	task    uint64
	typ     string
	compErr string
	// recRunResume: the tasks requeued, in ascending id.
	requeues []runRequeue
	// snapRun: the whole run.
	snap *run
}

// runRecStep is a step of recRun: its template and its new task.
type runRecStep struct {
	s       runStep
	fields  fieldVals
	state   State // Pending or Waiting
	due     int64
	args    string // the task's args: the template filled in when it has no references
	argKeys uint16
}

// runRequeue is one task of recRunResume.
type runRequeue struct {
	id, version uint64
	state       State
	hasArgs     bool // args were filled in again (a step released at once)
	args        string
	argKeys     uint16
}

func (e *enc) kvs(v []kv) {
	e.u(uint64(len(v)))
	for _, p := range v {
		e.s(p.k)
		e.s(p.v)
	}
}

func (d *dec) kvs() []kv {
	n := d.u()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	var v []kv
	for ; n > 0 && d.err == nil; n-- {
		v = append(v, kv{d.s(), d.s()})
	}
	return v
}

// sub writes a block built by fn, length-prefixed.
func (e *enc) sub(fn func(e *enc)) {
	var in enc
	fn(&in)
	e.s(string(in.b))
}

// sub reads a length-prefixed block with fn; bytes after what fn reads
// are a newer binary's and ignored.
func (d *dec) sub(fn func(d *dec)) {
	b := d.s()
	if d.err != nil {
		return
	}
	in := dec{b: []byte(b)}
	fn(&in)
	if in.err != nil {
		d.fail()
	}
}

const (
	stepOptional = 1 << iota
	stepWhenFailed
	stepComp
	stepRefs
	stepSkipped
)

func (e *enc) stepTemplate(s *runStep) {
	e.s(s.id)
	e.s(s.typ)
	e.byte(s.priority)
	e.u(s.maxAtt)
	e.u(s.timeout)
	e.s(s.label)
	e.u(uint64(len(s.deps)))
	for _, d := range s.deps {
		e.u(uint64(d))
	}
	var fl uint8
	if s.optional {
		fl |= stepOptional
	}
	if s.whenFail {
		fl |= stepWhenFailed
	}
	if s.comp {
		fl |= stepComp
	}
	if s.refs {
		fl |= stepRefs
	}
	if s.skipped {
		fl |= stepSkipped
	}
	e.byte(fl)
	e.kvs(s.args)
	e.s(s.compType)
	e.kvs(s.compArgs)
}

func (d *dec) stepTemplate(s *runStep) {
	s.id, s.typ, s.priority = d.s(), d.s(), d.prio()
	s.maxAtt, s.timeout, s.label = d.u(), d.u(), d.s()
	n := d.u()
	if n > MaxRunSteps {
		d.fail()
		return
	}
	for ; n > 0 && d.err == nil; n-- {
		v := d.u()
		if v >= MaxRunSteps {
			d.fail()
		}
		s.deps = append(s.deps, uint16(v))
	}
	fl := d.byte()
	s.optional, s.whenFail, s.comp = fl&stepOptional != 0, fl&stepWhenFailed != 0, fl&stepComp != 0
	s.refs, s.skipped = fl&stepRefs != 0, fl&stepSkipped != 0
	s.args = d.kvs()
	s.compType = d.s()
	s.compArgs = d.kvs()
}

// appendRunRecord encodes the run kinds' fields.
func appendRunRecord(e *enc, r *record) {
	x := r.run
	switch r.kind {
	case recRun:
		e.u(x.id)
		e.s(x.name)
		e.s(x.key)
		e.s(x.trace)
		e.i(r.at)
		e.u(x.first)
		e.u(uint64(len(x.steps)))
		for i := range x.steps {
			st := &x.steps[i]
			e.sub(func(e *enc) {
				e.stepTemplate(&st.s)
				e.byte(uint8(st.state))
				e.i(st.due)
				e.u(uint64(st.argKeys))
				e.s(st.args)
				e.fields(&st.fields) // last in its block
			})
		}
	case recRunComp:
		e.u(x.id)
		e.i(r.at)
		e.u(x.step)
		e.u(x.task)
		e.s(x.typ)
		e.u(uint64(r.argKeys))
		e.s(r.args)
		e.s(x.compErr)
	case recRunResume:
		e.u(x.id)
		e.i(r.at)
		e.s(r.why)
		e.u(uint64(len(x.requeues)))
		for _, q := range x.requeues {
			e.sub(func(e *enc) {
				e.u(q.id)
				e.u(q.version)
				e.byte(uint8(q.state))
				e.byte(boolByte(q.hasArgs))
				e.u(uint64(q.argKeys))
				e.s(q.args)
			})
		}
	case recRunCancel:
		e.u(x.id)
		e.i(r.at)
	case recRunDrop:
		e.i(r.at)
		e.ids(r.ids)
	case snapRunMeta:
		e.u(r.nextID)
	case snapRun:
		s := x.snap
		e.u(s.id)
		e.s(s.name)
		e.s(s.key)
		e.s(s.trace)
		e.i(s.createdMs)
		e.i(s.updatedMs)
		e.u(s.first)
		e.byte(uint8(s.state))
		e.byte(boolByte(s.compensating))
		e.u(s.resumes)
		e.u(uint64(len(s.steps)))
		for i := range s.steps {
			st := &s.steps[i]
			e.sub(func(e *enc) {
				e.stepTemplate(st)
				e.byte(uint8(st.st))
				e.u(st.compTask)
				e.byte(uint8(st.compSt))
				e.s(st.compErr)
			})
		}
	}
}

// decodeRunRecord decodes the run kinds' fields into r.
func decodeRunRecord(d *dec, r *record) {
	x := &runRec{}
	r.run = x
	switch r.kind {
	case recRun:
		x.id, x.name, x.key, x.trace, r.at, x.first = d.u(), d.s(), d.s(), d.s(), d.i(), d.u()
		n := d.u()
		if n > MaxRunSteps {
			d.fail()
			return
		}
		x.steps = make([]runRecStep, n)
		for i := range x.steps {
			st := &x.steps[i]
			d.sub(func(d *dec) {
				d.stepTemplate(&st.s)
				st.state, st.due = d.state(), d.i()
				st.argKeys, st.args = d.u16(), d.s()
				d.fields(&st.fields)
			})
		}
	case recRunComp:
		x.id, r.at, x.step, x.task, x.typ = d.u(), d.i(), d.u(), d.u(), d.s()
		r.argKeys, r.args, x.compErr = d.u16(), d.s(), d.s()
	case recRunResume:
		x.id, r.at, r.why = d.u(), d.i(), d.s()
		n := d.u()
		if n > MaxRunSteps {
			d.fail()
			return
		}
		x.requeues = make([]runRequeue, n)
		for i := range x.requeues {
			q := &x.requeues[i]
			d.sub(func(d *dec) {
				q.id, q.version, q.state, q.hasArgs = d.u(), d.u(), d.state(), d.bool()
				q.argKeys, q.args = d.u16(), d.s()
			})
		}
	case recRunCancel:
		x.id, r.at = d.u(), d.i()
	case recRunDrop:
		r.at = d.i()
		r.ids = d.ids(r.ids)
	case snapRunMeta:
		r.nextID = d.u()
	case snapRun:
		s := &run{}
		x.snap = s
		s.id, s.name, s.key, s.trace = d.u(), d.s(), d.s(), d.s()
		s.createdMs, s.updatedMs, s.first = d.i(), d.i(), d.u()
		s.state, s.compensating, s.resumes = runState(d.byte()), d.bool(), d.u()
		if s.state == 0 || int(s.state) >= len(runStateNames) {
			d.fail()
		}
		n := d.u()
		if n > MaxRunSteps || n == 0 {
			d.fail()
			return
		}
		s.steps = make([]runStep, n)
		for i := range s.steps {
			st := &s.steps[i]
			d.sub(func(d *dec) {
				d.stepTemplate(st)
				st.st = State(d.byte())
				st.compTask = d.u()
				st.compSt = State(d.byte())
				st.compErr = d.s()
				if st.st > NumStates || st.compSt > NumStates {
					d.fail()
				}
			})
		}
		s.bytes = runBytesOf(s)
	}
}

// runBytesOf is what a run counts toward the run byte cap: its name, key,
// trace id, step ids and arg templates (compensations' included).
func runBytesOf(r *run) int64 {
	n := int64(len(r.name) + len(r.key) + len(r.trace))
	for i := range r.steps {
		s := &r.steps[i]
		n += int64(len(s.id)) + kvBytes(s.args)
		if s.comp {
			n += int64(len(s.compType)) + kvBytes(s.compArgs)
		}
	}
	return n
}

// errRunCorrupt describes a run record that does not fit the state.
func errRunCorrupt(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, a...)...)
}

// describeRun adds a run record's fields for the inspector, and returns
// the tasks it concerns.
func describeRun(r *record, add func(k string, v any)) []uint64 {
	x := r.run
	var ids []uint64
	switch r.kind {
	case recRun:
		add("run_id", x.id)
		add("name", x.name)
		if x.key != "" {
			add("key", x.key)
		}
		for i := range x.steps {
			ids = append(ids, x.first+uint64(i))
			add("step."+x.steps[i].s.id, x.first+uint64(i))
		}
	case recRunComp:
		add("run_id", x.id)
		add("step", x.step)
		if x.task != 0 {
			ids = append(ids, x.task)
			add("task_id", x.task)
			add("task_type", x.typ)
		} else {
			add("error", x.compErr)
		}
	case recRunResume:
		add("run_id", x.id)
		for _, q := range x.requeues {
			ids = append(ids, q.id)
		}
		add("requeued", ids)
		add("reason", r.why)
	case recRunCancel:
		add("run_id", x.id)
	case recRunDrop:
		add("run_ids", r.ids)
	case snapRunMeta:
		add("next_run_id", r.nextID)
	case snapRun:
		add("run_id", x.snap.id)
		add("name", x.snap.name)
		add("state", x.snap.state)
	}
	return ids
}

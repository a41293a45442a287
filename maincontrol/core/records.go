package core

import (
	"errors"
	"fmt"
)

// Records are the core's change log. They are binary, compact, and never
// on the wire. Each starts with a kind byte. Numbers are varints, and
// strings and lists are length-prefixed. Live decisions fill a record, hand
// its encoding to Effects.Record and then apply it. Recovery decodes and
// applies the same bytes, so both reach the same state.
//
// Records and snapshot entries outlive the binary that wrote them. So
// their encodings change only under these rules.
//   - A new field goes at the end of its kind's encoding and is read with
//     an opt reader (dec.optU and its kin). Absent, it is the zero value,
//     so data dirs written before the field existed still load.
//   - Bytes after the last field this binary knows are ignored, since a
//     newer binary appended them. The log's and the snapshot's checksums,
//     not this decoder, catch damaged bytes.
//   - New and snap_task end with the task field table's values
//     (taskfields.go). A new task field is a row there, not code here.
//   - The v1 task fields are written and read by the coders named after
//     their v1Fields rows (v1codec.go). Their places are fixed here.
//   - A field is never removed, reordered or given a new meaning. An
//     integer field only widens, as varints read the same. A change an
//     older binary must not misread gets a new kind, which it refuses.

type recKind uint8

const (
	recNew      recKind = iota + 1 // a task was created (waiting or pending)
	recDispatch                    // pending -> dispatched
	recStart                       // dispatched -> running
	recBack                        // dispatched -> pending (no attempt used)
	recRetry                       // running -> retrying
	recArm                         // a retrying task's backoff starts (it waited for the retry cap)
	recReady                       // retrying or waiting -> pending; a delayed pending task queued
	recEnd                         // -> succeeded, failed or cancelled
	recDrop                        // terminal tasks forgotten (retention)
	recExecReg                     // an executor registered
	recExecGone                    // an executor was lost or left
	// Snapshot entries.
	snapMeta
	snapState
	snapTask
	// recSkipIDs moves the next task id past ids that lost records may
	// have handed out (Core.SkipIDs). Kinds are stored numbers, so new ones
	// go last.
	recSkipIDs
	// recEpoch starts a run of the main control. Its dispatch versions
	// lie above every version of the runs before (Core.BeginEpoch).
	recEpoch
	// recRequeue moves failed or cancelled to pending or waiting (requeue.go).
	recRequeue
	// recStateFix sets or deletes one shared-state key by hand
	// (state_set, state_del).
	recStateFix
	// recPause pauses or resumes a task type. Snapshots hold one per
	// paused type.
	recPause
	// recExecTypes changes a registered executor's task types (the
	// executor's types message). Its registration order stays.
	recExecTypes
	// recSched adds a schedule. Snapshots hold one per schedule, with
	// its pause, last fire time and firings (schedule.go).
	recSched
	// recSchedOp marks a schedule fired, passed over, paused, resumed
	// or deleted (schedOp).
	recSchedOp
	// The run kinds (runs.go, runrec.go) record a run made with its step
	// tasks, a compensation made, and a run resumed, cancelled or forgotten.
	// Snapshots hold the run counter and each run.
	recRun
	recRunComp
	recRunResume
	recRunCancel
	recRunDrop
	snapRunMeta
	snapRun
)

var recNames = [...]string{"", "new", "dispatch", "start", "back", "retry", "arm", "ready", "end", "drop",
	"exec_reg", "exec_gone", "snap_meta", "snap_state", "snap_task", "skip_ids", "epoch", "requeue",
	"state_fix", "pause", "exec_types", "sched", "sched_op", "run", "run_comp", "run_resume", "run_cancel", "run_drop",
	"snap_run_meta", "snap_run"}

func (k recKind) String() string {
	if int(k) < len(recNames) && k != 0 {
		return recNames[k]
	}
	return fmt.Sprintf("kind%d", k)
}

// ErrCorrupt reports a record or snapshot entry the core cannot read.
var ErrCorrupt = errors.New("corrupt record")

type kv struct{ k, v string }

// record is the union of every record kind's fields. Each kind uses some.
type record struct {
	kind        recKind
	id          uint64
	version     uint64
	attempt     uint32
	at          int64
	due         int64
	state       State
	priority    uint8
	flags       taskFlags
	argKeys     uint16
	outKeys     uint16
	maxAttempts uint64
	timeoutMs   uint64
	seq         uint64
	created     int64
	typ         string
	exec        string
	key         string
	trace       string
	args        string
	errText     string
	out         string
	why         string
	deps        []uint64
	ids         []uint64
	types       []string
	slots       uint64
	sets        []kv
	stateVer    uint64
	requeues    uint64    // snapTask: how many times the task was requeued (why: the latest reason)
	fields      fieldVals // recNew and snapTask: the task field table's values
	// With on, recStateFix sets the key, else deletes it. recPause pauses
	// the type, else resumes it.
	on bool
	// startOff is a snapTask's start of its latest attempt (task.startOff).
	startOff uint32
	// filled marks a recReady or recRequeue whose args are the task's new
	// args, its output references filled in (runs). They follow its
	// other fields.
	filled bool
	// run holds the run kinds' fields (runrec.go).
	run *runRec
	// snapMeta
	nextID, seqCounter, regSeq uint64
	// epoch is the run that starts (recEpoch). In snapMeta it is the epoch
	// the next start takes.
	epoch uint64
	// sc holds recSched's and recSchedOp's fields.
	sc schedFields

	// Resolved by the live decision that built the record, so that
	// applying it need not look them up again by name. They are never
	// encoded, and nil on replay, where the lookups run as usual.
	typeRef *taskType // the task type named typ (recNew)
	execRef *executor // the executor named exec (recDispatch)
}

// reset clears r but keeps its slices' room. The clear is in place. A
// composite literal with the slices in it is built on the stack and
// then copied over r, three times the work for four records a task.
func (r *record) reset() {
	deps, ids, types, sets := r.deps[:0], r.ids[:0], r.types[:0], r.sets[:0]
	*r = record{}
	r.deps, r.ids, r.types, r.sets = deps, ids, types, sets
}

// appendRecord encodes r after dst.
func appendRecord(dst []byte, r *record) []byte {
	e := enc{b: dst}
	e.byte(uint8(r.kind))
	switch r.kind {
	case recNew:
		e.u(r.id)
		e.v1Type(r)
		e.v1Priority(r)
		e.v1MaxAttempts(r)
		e.v1Timeout(r)
		e.i(r.at)
		e.v1Delay(r)
		e.byte(uint8(r.state))
		e.v1Key(r)
		e.v1Trace(r)
		e.v1Deps(r)
		e.u(uint64(r.argKeys))
		e.s(r.args)
		e.fields(&r.fields) // last: a new field of this kind goes above, or in taskFields
	case recDispatch:
		e.u(r.id)
		e.u(r.version)
		e.u(uint64(r.attempt))
		e.s(r.exec)
		e.i(r.at)
		e.i(r.due)
	case recStart:
		e.u(r.id)
		e.u(r.version)
		e.i(r.at)
		e.i(r.due)
	case recBack:
		e.u(r.id)
		e.i(r.at)
		e.s(r.why)
	case recRetry:
		e.u(r.id)
		e.i(r.at)
		e.i(r.due)
		e.s(r.errText)
		e.u(uint64(r.outKeys))
		e.s(r.out)
	case recArm:
		e.u(r.id)
		e.i(r.at)
		e.i(r.due)
	case recReady:
		e.u(r.id)
		e.i(r.at)
		e.filledArgs(r)
	case recEnd:
		e.u(r.id)
		e.i(r.at)
		e.byte(uint8(r.state))
		e.s(r.errText)
		e.u(uint64(r.outKeys))
		e.s(r.out)
		e.u(r.stateVer)
		e.u(uint64(len(r.sets)))
		for _, p := range r.sets {
			e.s(p.k)
			e.s(p.v)
		}
		e.byte(uint8(r.flags))
	case recDrop:
		e.i(r.at)
		e.ids(r.ids)
	case recExecReg:
		e.s(r.exec)
		e.u(uint64(len(r.types)))
		for _, t := range r.types {
			e.s(t)
		}
		e.u(r.slots)
	case recExecGone:
		e.s(r.exec)
		e.s(r.why)
	case recSkipIDs:
		e.u(r.nextID)
	case recEpoch:
		e.u(r.epoch)
	case recRequeue:
		e.u(r.id)
		e.i(r.at)
		e.u(r.version)
		e.byte(uint8(r.state))
		e.u(uint64(r.attempt))
		e.s(r.why)
		e.filledArgs(r)
	case recStateFix:
		e.s(r.key)
		e.s(r.args)
		e.byte(boolByte(r.on))
		e.u(r.stateVer)
	case recPause:
		e.s(r.typ)
		e.byte(boolByte(r.on))
	case recExecTypes:
		e.s(r.exec)
		e.u(uint64(len(r.types)))
		for _, t := range r.types {
			e.s(t)
		}
	case recSched:
		e.s(r.sc.name)
		e.s(r.sc.cron)
		e.s(r.sc.tz)
		e.u(r.sc.jitterMs)
		e.byte(boolByte(r.sc.catchUp))
		e.byte(boolByte(r.sc.paused))
		e.i(r.sc.last)
		e.u(r.sc.fires)
		e.i(r.sc.lastFired)
		e.u(uint64(len(r.sc.body)))
		for _, p := range r.sc.body {
			e.s(p.k)
			e.s(p.v)
		}
	case recSchedOp:
		e.s(r.sc.name)
		e.byte(uint8(r.sc.op))
		e.i(r.sc.last)
	case snapMeta:
		e.u(r.nextID)
		e.u(r.stateVer)
		e.u(r.seqCounter)
		e.u(r.regSeq)
		e.u(r.epoch)
	case snapState:
		e.s(r.key)
		e.s(r.args)
	case snapTask:
		e.u(r.id)
		e.v1MaxAttempts(r)
		e.v1Timeout(r)
		e.i(r.created)
		e.i(r.at)
		e.v1Delay(r)
		e.u(r.seq)
		e.u(r.version)
		e.u(uint64(r.attempt))
		e.v1Type(r)
		e.byte(uint8(r.state))
		e.v1Priority(r)
		e.byte(uint8(r.flags))
		e.s(r.exec)
		e.v1Trace(r)
		e.u(uint64(r.argKeys))
		e.s(r.args)
		e.v1Key(r)
		e.s(r.errText)
		e.u(uint64(r.outKeys))
		e.s(r.out)
		e.v1Deps(r)
		e.u(r.requeues)
		e.s(r.why)
		e.u(uint64(r.startOff))
		e.fields(&r.fields) // last: a new field of this kind goes above, or in taskFields
	case recRun, recRunComp, recRunResume, recRunCancel, recRunDrop, snapRunMeta, snapRun:
		appendRunRecord(&e, r)
	}
	return e.b
}

// decodeRecord decodes payload into r (reusing r's slices). Fields of a
// newer binary after the known ones are ignored (see the rules above).
func decodeRecord(payload []byte, r *record) error {
	return decodeRecordNames(payload, r, nil)
}

// decodeRecordNames is decodeRecord that interns task types and executor
// ids in names, when not nil.
func decodeRecordNames(payload []byte, r *record, names *interner) error {
	r.reset()
	d := dec{b: payload, names: names}
	r.kind = recKind(d.byte())
	switch r.kind {
	case recNew:
		r.id = d.u()
		d.v1Type(r)
		d.v1Priority(r)
		d.v1MaxAttempts(r)
		d.v1Timeout(r)
		r.at = d.i()
		d.v1Delay(r)
		r.state = d.state()
		d.v1Key(r)
		d.v1Trace(r)
		d.v1Deps(r)
		r.argKeys, r.args = d.u16(), d.s()
		d.fields(&r.fields) // last, as written
	case recDispatch:
		r.id, r.version, r.attempt, r.exec, r.at, r.due = d.u(), d.u(), d.u32(), d.name(), d.i(), d.i()
	case recStart:
		r.id, r.version, r.at, r.due = d.u(), d.u(), d.i(), d.i()
	case recBack:
		r.id, r.at, r.why = d.u(), d.i(), d.s()
	case recRetry:
		r.id, r.at, r.due, r.errText, r.outKeys, r.out = d.u(), d.i(), d.i(), d.s(), d.u16(), d.s()
	case recArm:
		r.id, r.at, r.due = d.u(), d.i(), d.i()
	case recReady:
		r.id, r.at = d.u(), d.i()
		d.filledArgs(r)
	case recEnd:
		r.id, r.at, r.state = d.u(), d.i(), d.state()
		r.errText, r.outKeys, r.out, r.stateVer = d.s(), d.u16(), d.s(), d.u()
		n := d.u()
		if n > uint64(len(d.b)) {
			d.fail()
		}
		for ; n > 0 && d.err == nil; n-- {
			r.sets = append(r.sets, kv{d.s(), d.s()})
		}
		r.flags = taskFlags(d.byte())
	case recDrop:
		r.at = d.i()
		r.ids = d.ids(r.ids)
	case recExecReg:
		r.exec = d.s()
		n := d.u()
		if n > uint64(len(d.b)) {
			d.fail()
		}
		for ; n > 0 && d.err == nil; n-- {
			r.types = append(r.types, d.s())
		}
		r.slots = d.u()
	case recExecGone:
		r.exec, r.why = d.s(), d.s()
	case recSkipIDs:
		r.nextID = d.u()
	case recEpoch:
		r.epoch = d.u()
	case recRequeue:
		r.id, r.at, r.version, r.state, r.attempt, r.why = d.u(), d.i(), d.u(), d.state(), d.u32(), d.s()
		d.filledArgs(r)
	case recStateFix:
		r.key, r.args, r.on, r.stateVer = d.s(), d.s(), d.bool(), d.u()
	case recPause:
		r.typ, r.on = d.s(), d.bool()
	case recExecTypes:
		r.exec = d.s()
		n := d.u()
		if n > uint64(len(d.b)) {
			d.fail()
		}
		for ; n > 0 && d.err == nil; n-- {
			r.types = append(r.types, d.s())
		}
	case recSched:
		r.sc.name, r.sc.cron, r.sc.tz, r.sc.jitterMs = d.s(), d.s(), d.s(), d.u()
		r.sc.catchUp, r.sc.paused, r.sc.last, r.sc.fires = d.bool(), d.bool(), d.i(), d.u()
		r.sc.lastFired = d.i()
		n := d.u()
		if n > uint64(len(d.b)) {
			d.fail()
		}
		for ; n > 0 && d.err == nil; n-- {
			r.sc.body = append(r.sc.body, kv{d.s(), d.s()})
		}
	case recSchedOp:
		r.sc.name, r.sc.op, r.sc.last = d.s(), schedOp(d.byte()), d.i()
	case snapMeta:
		r.nextID, r.stateVer, r.seqCounter, r.regSeq = d.u(), d.u(), d.u(), d.u()
		r.epoch = d.optU() // absent before restart epochs: none begun

	case snapState:
		r.key, r.args = d.s(), d.s()
	case snapTask:
		r.id = d.u()
		d.v1MaxAttempts(r)
		d.v1Timeout(r)
		r.created, r.at = d.i(), d.i()
		d.v1Delay(r)
		r.seq, r.version, r.attempt = d.u(), d.u(), d.u32()
		d.v1Type(r)
		r.state = d.state()
		d.v1Priority(r)
		r.flags, r.exec = taskFlags(d.byte()), d.name()
		d.v1Trace(r)
		r.argKeys, r.args = d.u16(), d.s()
		d.v1Key(r)
		r.errText, r.outKeys, r.out = d.s(), d.u16(), d.s()
		d.v1Deps(r)
		r.requeues, r.why = d.optU(), d.optS() // absent before requeue
		r.startOff = d.optU32()                // absent before durations: no start known
		d.fields(&r.fields)                    // last, as written
	case recRun, recRunComp, recRunResume, recRunCancel, recRunDrop, snapRunMeta, snapRun:
		decodeRunRecord(&d, r)
	default:
		return fmt.Errorf("%w: unknown kind %d", ErrCorrupt, r.kind)
	}
	if d.err != nil {
		return fmt.Errorf("%w: %s record truncated or invalid", ErrCorrupt, r.kind)
	}
	return nil
}

// filledArgs ends a recReady or recRequeue with its filled-in args.
func (e *enc) filledArgs(r *record) {
	e.byte(boolByte(r.filled))
	if r.filled {
		e.u(uint64(r.argKeys))
		e.s(r.args)
	}
}

// filledArgs reads what enc.filledArgs wrote. A record written before
// runs lacks it, and the task keeps its args.
func (d *dec) filledArgs(r *record) {
	if r.filled = d.more() && d.bool(); r.filled {
		r.argKeys, r.args = d.u16(), d.s()
	}
}

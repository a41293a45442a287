package core

import "strings"

// The mappings of the v1 fields that every submit, snapshot entry and
// restored task runs have one line or method per row of v1Fields. They
// are plain code, not func values in the rows. A call through a func
// value is indirect, and moves the coder and record it gets to the heap.

// The bytes of each v1 field, named after its row. Both the new-task
// record and the snapshot entry call them, each at the row's place in
// its encoding (records.go). They are small enough to be inlined.
func (e *enc) v1Type(r *record)        { e.s(r.typ) }
func (e *enc) v1Priority(r *record)    { e.byte(r.priority) }
func (e *enc) v1MaxAttempts(r *record) { e.u(r.maxAttempts) }
func (e *enc) v1Timeout(r *record)     { e.u(r.timeoutMs) }
func (e *enc) v1Delay(r *record)       { e.i(r.due) }
func (e *enc) v1Key(r *record)         { e.s(r.key) }
func (e *enc) v1Trace(r *record)       { e.s(r.trace) }
func (e *enc) v1Deps(r *record)        { e.ids(r.deps) }

// The readers of what the writers above wrote.
func (d *dec) v1Type(r *record)        { r.typ = d.name() }
func (d *dec) v1Priority(r *record)    { r.priority = d.prio() }
func (d *dec) v1MaxAttempts(r *record) { r.maxAttempts = d.u() }
func (d *dec) v1Timeout(r *record)     { r.timeoutMs = d.u() }
func (d *dec) v1Delay(r *record)       { r.due = d.i() }
func (d *dec) v1Key(r *record)         { r.key = d.s() }
func (d *dec) v1Trace(r *record)       { r.trace = d.s() }
func (d *dec) v1Deps(r *record)        { r.deps = d.ids(r.deps) }

// fillV1 copies a parsed submit's v1 values into its new-task record, r.at
// set. It copies what borrows from the read buffer.
func (c *Core) fillV1(s *submitReq, r *record) {
	if tt := c.types[s.typ]; tt != nil {
		r.typ, r.typeRef = tt.name, tt // no copy of a type name already known
	} else {
		r.typ = strings.Clone(s.typ)
	}
	r.priority = uint8(s.priority)
	r.maxAttempts = s.maxAttempts
	r.timeoutMs = s.timeoutMs
	r.due = addMs(r.at, s.delayMs) // a delay is kept as the due time
	if s.hasKey {
		r.key = strings.Clone(s.key)
	}
	r.trace = strings.Clone(s.trace) // "": derived when needed (trace.go)
	r.deps = append(r.deps, s.deps...)
}

// keepV1 stores the v1 values of a new-task record or snapshot entry in
// its task, just inserted.
func (c *Core) keepV1(r *record, t *task) {
	if t.typ = r.typeRef; t.typ == nil { // on replay, looked up by name
		t.typ = c.typeFor(r.typ)
	}
	t.typ.refs++
	t.priority = r.priority
	t.maxAttempts = r.maxAttempts
	t.timeoutMs = r.timeoutMs
	// A new task has a timer only when delayed. A snapshot entry holds
	// the task's due time, whatever its timer.
	if r.kind == snapTask || r.due > r.at {
		t.dueMs = r.due
	}
	if r.key != "" {
		t.newExtra().key = r.key
	}
	if r.trace != "" {
		t.newExtra().traceID = r.trace
	}
	if len(r.deps) > 0 {
		t.newExtra().deps = encodeDeps(r.deps)
	}
}

// entryV1 copies the task's v1 values into its snapshot entry.
func entryV1(t *task, r *record) {
	r.typ = t.typ.name
	r.priority = t.priority
	r.maxAttempts = t.maxAttempts
	r.timeoutMs = t.timeoutMs
	r.due = t.dueMs
	r.key = t.key()
	r.trace = t.ownTrace()
	r.deps = t.deps().appendTo(r.deps)
}

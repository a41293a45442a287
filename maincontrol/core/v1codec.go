package core

import "strings"

// The mappings of the v1 fields that every submit, snapshot entry and
// restored task runs have one case per row of v1Fields. They are plain
// code, not func values in the rows. A call through a func value is
// indirect, and moves the coder and record it gets to the heap.

// v1 writes the values of the given rows, in that order, at this place
// of a new-task record or snapshot entry. Both kinds store a field alike.
func (e *enc) v1(r *record, rows ...int) {
	for _, i := range rows {
		switch i {
		case v1Type:
			e.s(r.typ)
		case v1Priority:
			e.byte(r.priority)
		case v1MaxAttempts:
			e.u(r.maxAttempts)
		case v1Timeout:
			e.u(r.timeoutMs)
		case v1Delay:
			e.i(r.due)
		case v1Key:
			e.s(r.key)
		case v1Trace:
			e.s(r.trace)
		case v1Deps:
			e.ids(r.deps)
		}
	}
}

// v1 reads what enc.v1 wrote with the same rows.
func (d *dec) v1(r *record, rows ...int) {
	for _, i := range rows {
		switch i {
		case v1Type:
			r.typ = d.name()
		case v1Priority:
			r.priority = d.prio()
		case v1MaxAttempts:
			r.maxAttempts = d.u()
		case v1Timeout:
			r.timeoutMs = d.u()
		case v1Delay:
			r.due = d.i()
		case v1Key:
			r.key = d.s()
		case v1Trace:
			r.trace = d.s()
		case v1Deps:
			r.deps = d.ids(r.deps)
		}
	}
}

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

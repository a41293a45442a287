package core

import (
	"slices"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// The task fields of storage format v1 are the rows of v1Fields. Each has
// a typed slot in the submit request, the record and the task. Each has a
// fixed place in the new-task record and the snapshot entry (records.go).
// Their v1 bytes never change. A row says how submit reads the field, and
// how TaskInfo and the inspector show it. Its cases in v1codec.go say how
// the new-task record gets it, how records and snapshot entries store it,
// and how the task keeps it. Fields added since are rows of taskFields
// (taskfields.go), which need no code beyond their row.
//
// The rows follow the spec's order of submit's keys. A submit with two bad
// values is refused for the first.

// The rows' indexes. numV1Fields counts them.
const (
	v1Type = iota
	v1Priority
	v1MaxAttempts
	v1Timeout
	v1Delay
	v1Key
	v1Trace
	v1Deps
	numV1Fields
)

// Keys of v1 fields that no reply carries (keys.go has the others).
var (
	kPriority  = wire.MustKey("priority")
	kDelayMs   = wire.MustKey("delay_ms")
	kKey       = wire.MustKey("key")
	kDependsOn = wire.MustKey("depends_on")
)

// v1Field describes one task field of storage format v1.
type v1Field struct {
	key wire.Key
	// read checks a submitted value and keeps it in c.sub. It takes no pointer
	// to the request, as a call through the table would move it to the heap.
	read func(c *Core, v string) error
	// absent runs when a submit lacks the key. It sets a default, or refuses.
	absent func(s *submitReq) error // called with c.sub
	// show copies the value of a new-task record or snapshot entry into
	// a TaskInfo. It is nil when TaskInfo has no place for it.
	show func(r *record, ti *TaskInfo)
	// text adds the value to the inspector's line, when it has one.
	text func(r *record, add func(k string, v any))
}

// v1Fields is the table, indexed by the constants above.
var v1Fields = [numV1Fields]v1Field{
	v1Type: {key: kTaskType,
		read: func(c *Core, v string) error {
			s := &c.sub
			if v == "" {
				return &wire.ValueError{Key: "task_type", Reason: "must not be empty"}
			}
			s.typ = v
			return nil
		},
		absent: func(*submitReq) error { return wire.MissingKey("task_type") },
		show:   func(r *record, ti *TaskInfo) { ti.Type = r.typ },
		text:   func(r *record, add func(string, any)) { add("task_type", r.typ) }},
	v1Priority: {key: kPriority,
		read: func(c *Core, v string) (err error) {
			s := &c.sub
			if s.priority, err = wire.UintValue("priority", v); err == nil && s.priority > 9 {
				err = &wire.ValueError{Key: "priority", Reason: "must be 0 to 9"}
			}
			return err
		},
		show: func(r *record, ti *TaskInfo) { ti.Priority = r.priority },
		text: func(r *record, add func(string, any)) { add("priority", r.priority) }},
	v1MaxAttempts: {key: kMaxAttempts,
		read: func(c *Core, v string) (err error) {
			s := &c.sub
			if s.maxAttempts, err = wire.UintValue("max_attempts", v); err == nil && s.maxAttempts < 1 {
				err = &wire.ValueError{Key: "max_attempts", Reason: "must be at least 1"}
			}
			return err
		},
		absent: func(s *submitReq) error { s.maxAttempts = DefaultMaxAttempts; return nil },
		show:   func(r *record, ti *TaskInfo) { ti.MaxAttempts = r.maxAttempts },
		text:   func(r *record, add func(string, any)) { add("max_attempts", r.maxAttempts) }},
	v1Timeout: {key: kTimeoutMs,
		read: func(c *Core, v string) (err error) {
			s := &c.sub
			s.timeoutMs, err = wire.UintValue("timeout_ms", v)
			return err
		},
		show: func(r *record, ti *TaskInfo) { ti.TimeoutMs = r.timeoutMs },
		text: func(r *record, add func(string, any)) { add("timeout_ms", r.timeoutMs) }},
	// delay_ms is stored as the new task's due time, not as a duration.
	v1Delay: {key: kDelayMs,
		read: func(c *Core, v string) (err error) {
			s := &c.sub
			s.delayMs, err = wire.UintValue("delay_ms", v)
			return err
		},
		text: func(r *record, add func(string, any)) {
			if r.kind == recNew && r.due > r.at {
				add("not_before", stamp(r.due))
			}
		}},
	v1Key: {key: kKey,
		read: func(c *Core, v string) error {
			s := &c.sub
			if v == "" {
				return &wire.ValueError{Key: "key", Reason: "must not be empty"}
			}
			s.key, s.hasKey = v, true
			return nil
		},
		show: func(r *record, ti *TaskInfo) { ti.Key = r.key },
		text: func(r *record, add func(string, any)) {
			if r.key != "" {
				add("key", r.key)
			}
		}},
	// trace_id is "" when the submitter gave none, and one is derived.
	v1Trace: {key: kTraceID,
		read: func(c *Core, v string) error { c.sub.trace = v; return nil },
		show: func(r *record, ti *TaskInfo) { ti.TraceID = r.traceID() },
		text: func(r *record, add func(string, any)) {
			if r.trace == "" {
				add("trace_id", r.traceID()+" (derived)")
			} else {
				add("trace_id", r.trace)
			}
		}},
	v1Deps: {key: kDependsOn,
		read: func(c *Core, v string) error { return c.parseDeps(v, &c.sub) },
		show: func(r *record, ti *TaskInfo) { ti.DependsOn = slices.Clone(r.deps) },
		text: func(r *record, add func(string, any)) {
			if len(r.deps) > 0 {
				add("depends_on", r.deps)
			}
		}},
}

// v1Index returns the row whose key is k, or -1.
func v1Index(k string) int {
	for i := range v1Fields {
		if v1Fields[i].key.String() == k {
			return i
		}
	}
	return -1
}

// created is when the task of a new-task record or snapshot entry was
// made. A new-task record's time is its creation.
func (r *record) createdMs() int64 {
	if r.kind == recNew {
		return r.at
	}
	return r.created
}

// traceID is the trace id of the task of a new-task record or snapshot
// entry. It is the task's own, else the derived one.
func (r *record) traceID() string {
	if r.trace != "" {
		return r.trace
	}
	return derivedTrace(r.id, r.createdMs())
}

// stamp formats a time in ms for the inspector.
func stamp(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

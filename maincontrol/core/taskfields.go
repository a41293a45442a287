package core

import (
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// Task fields added after storage format v1 are described once, in
// taskFields. A row names the field's submit and task_state key, its rule,
// and where TaskInfo shows it. Everything else follows from the row.
//   - Submit reads it, checks the rule, and copies it into the new-task
//     record. The task's bytes count it.
//   - The new-task record and the snapshot's task entry carry the fields
//     last, as a count then the values in table order (see records.go).
//     A record without any keeps its v1 bytes.
//   - The task keeps them in its extra block. Query, TaskInfo and the
//     inspector show the ones that are set.
//
// A field is text a submitter sets once. Fields with behaviour of their
// own still need code where they act. Rows are never reordered or removed,
// because the order is the storage order.

// numFields counts the rows. Each row's index is a constant above it.
const (
	fieldLabel    = iota // label: free text for people, such as a batch name
	fieldOptional        // optional: "true" lets dependents go on when the task fails (steps.go)
	fieldWhen            // when: "failed" runs the task only when a dependency failed (steps.go)
	numFields
)

// MaxLabelLen bounds a task's label, in bytes after unescaping.
const MaxLabelLen = 256

// taskField describes one field of the table.
type taskField struct {
	key   wire.Key                // submit and task_state key, and the inspector's name
	check func(v string) error    // the rule a submitted value must pass; nil accepts any
	info  func(*TaskInfo) *string // where TaskInfo shows the value
	unset string                  // a submitted value that means the same as none, kept as ""
}

// taskFields is the table, indexed by the constants above.
var taskFields = [numFields]taskField{
	fieldLabel: {key: wire.MustKey("label"), check: maxText("label", MaxLabelLen),
		info: func(ti *TaskInfo) *string { return &ti.Label }},
	fieldOptional: {key: wire.MustKey("optional"), check: oneOf("optional", "true", "false"), unset: "false",
		info: func(ti *TaskInfo) *string { return &ti.Optional }},
	fieldWhen: {key: wire.MustKey("when"), check: oneOf("when", "failed"),
		info: func(ti *TaskInfo) *string { return &ti.When }},
}

// fieldVals holds a task's values of the table's fields. "" is unset.
type fieldVals [numFields]string

// maxText is a rule allowing at most n bytes, after unescaping.
func maxText(key string, n int) func(string) error {
	return func(v string) error {
		if len(v) > n {
			return &wire.ValueError{Key: key, Reason: "longer than " + strconv.Itoa(n) + " bytes"}
		}
		return nil
	}
}

// oneOf is a rule allowing one of the listed values.
func oneOf(key string, vals ...string) func(string) error {
	return func(v string) error {
		if slices.Contains(vals, v) {
			return nil
		}
		return &wire.ValueError{Key: key, Reason: "must be " + strings.Join(vals, " or ") + ", not " + strconv.Quote(clipText(v))}
	}
}

// set stores value v when k names a field. It reports whether k did.
func (f *fieldVals) set(k, v string) bool {
	for i := range taskFields {
		if taskFields[i].key.String() == k {
			f[i] = v
			return true
		}
	}
	return false
}

// check applies every field's rule, in table order, and clears the values
// that mean unset.
func (f *fieldVals) check() error {
	for i := range taskFields {
		if c := taskFields[i].check; c != nil && f[i] != "" {
			if err := c(f[i]); err != nil {
				return err
			}
		}
		if f[i] == taskFields[i].unset {
			f[i] = ""
		}
	}
	return nil
}

// clone copies the values out of a read buffer they may borrow from.
func (f *fieldVals) clone() {
	for i := range f {
		f[i] = strings.Clone(f[i])
	}
}

// empty reports whether no field is set.
func (f *fieldVals) empty() bool { return *f == fieldVals{} }

// bytes is what the values count toward the byte caps (heldBytes).
func (f *fieldVals) bytes() int64 {
	var n int64
	for _, v := range f {
		n += int64(len(v))
	}
	return n
}

// all returns the fields that have a value, as key and value.
func (f *fieldVals) all() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for i := range taskFields {
			if f[i] != "" && !yield(taskFields[i].key.String(), f[i]) {
				return
			}
		}
	}
}

// reply adds the set fields to a task_state frame.
func (f *fieldVals) reply(b *wire.Builder) {
	for i := range taskFields {
		if f[i] != "" {
			b.StrK(taskFields[i].key, f[i])
		}
	}
}

// replyKeys counts the keys the set fields add to a task_state reply.
func (f *fieldVals) replyKeys() int {
	n := 0
	for _, v := range f {
		if v != "" {
			n++
		}
	}
	return n
}

// replyLen is the bytes the set fields add to a task_state reply.
func (f *fieldVals) replyLen() int {
	n := 0
	for i := range taskFields {
		if f[i] != "" {
			n += len("\n=") + len(taskFields[i].key.String()) + wire.EscapedLen(f[i])
		}
	}
	return n
}

// show copies the values into a TaskInfo.
func (f *fieldVals) show(ti *TaskInfo) {
	for i := range taskFields {
		*taskFields[i].info(ti) = f[i]
	}
}

// fields appends the values as a count and strings, leaving them out
// when none is set, so that such a record keeps its v1 bytes.
func (e *enc) fields(f *fieldVals) {
	n := len(f)
	for n > 0 && f[n-1] == "" {
		n--
	}
	if n == 0 {
		return
	}
	e.u(uint64(n))
	for _, v := range f[:n] {
		e.s(v)
	}
}

// fields reads what enc.fields wrote. Nothing means no field set. Values
// of fields a newer binary added are read and dropped.
func (d *dec) fields(f *fieldVals) {
	if !d.more() {
		return
	}
	n := d.u()
	if n > uint64(len(d.b)) { // each value takes at least one byte
		d.fail()
		return
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		v := d.s()
		if i < uint64(len(f)) {
			f[i] = v
		}
	}
}

// TaskInfo is a read-only view of one task, for the offline inspector and
// metrics.
type TaskInfo struct {
	ID          uint64    `json:"task_id"`
	MaxAttempts uint64    `json:"max_attempts"`
	TimeoutMs   uint64    `json:"timeout_ms"`
	Version     uint64    `json:"version"`
	Attempt     uint32    `json:"attempt"`
	State       State     `json:"state"`
	Priority    uint8     `json:"priority"`
	Type        string    `json:"task_type"`
	Executor    string    `json:"executor_id,omitempty"`
	TraceID     string    `json:"trace_id"`
	Key         string    `json:"key,omitempty"`
	Error       string    `json:"error,omitempty"`
	Out         string    `json:"out,omitempty"`  // out.* lines as on the wire
	Args        string    `json:"args,omitempty"` // arg.* lines as on the wire
	DependsOn   []uint64  `json:"depends_on,omitempty"`
	Created     time.Time `json:"created"`
	Updated     time.Time `json:"updated"`
	// The task field table's fields (taskFields) follow.
	Label    string `json:"label,omitempty"`
	Optional string `json:"optional,omitempty"` // "true" or ""
	When     string `json:"when,omitempty"`     // "failed" or
}

// Task returns a view of the task with this id. Like every getter, it
// changes nothing. It shows recovered state once recovery has ended.
func (c *Core) Task(id uint64) (TaskInfo, bool) {
	t := c.tasks.get(id)
	if t == nil {
		return TaskInfo{}, false
	}
	var r record
	taskEntry(t, &r)
	return r.info(), true
}

// info is the TaskInfo of a snapshot entry's task, or of a new-task
// record's at its creation.
func (r *record) info() TaskInfo {
	ti := TaskInfo{ID: r.id, Version: r.version, Attempt: r.attempt, State: r.state, Executor: r.exec,
		Error: r.errText, Out: r.out, Args: r.args,
		Created: time.UnixMilli(r.createdMs()), Updated: time.UnixMilli(r.at)}
	for i := range v1Fields {
		if show := v1Fields[i].show; show != nil {
			show(r, &ti)
		}
	}
	r.fields.show(&ti)
	return ti
}

// Fields returns the task field table's fields that are set, as key and
// value, for a reader that shows every field without naming each.
func (ti *TaskInfo) Fields() iter.Seq2[string, string] {
	var f fieldVals
	for i := range taskFields {
		f[i] = *taskFields[i].info(ti)
	}
	return f.all()
}

// fields returns the task's values of the table's fields.
func (t *task) fields() *fieldVals {
	if t.x == nil {
		return &noExtra.fields
	}
	return &t.x.fields
}

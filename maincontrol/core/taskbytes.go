package core

// The bytes tasks hold. --max-pending and --retention-max count tasks. But
// a task may hold up to a frame of args, and an ended one as much again of
// outputs. At the defaults, a million pending tasks of 1 MiB each, or
// 100,000 kept ones, would not fit a small host's memory. So the core also
// keeps two byte totals, derived from the task table alone. pendingBytes
// is what the tasks not yet ended hold. --max-pending-bytes caps it, and a
// submit that would pass the cap gets queue_full. retainedBytes is what
// the ended tasks kept hold. --retention-max-bytes caps it. Past it the
// oldest ended are forgotten, as past --retention-max. Both follow every
// change record. So replaying the log into an empty core gives the same
// totals, and a snapshot's are counted as it loads.

const (
	// DefaultMaxPendingBytes is the default cap on the bytes held by tasks
	// not yet ended.
	DefaultMaxPendingBytes = 512 << 20
	// DefaultRetentionMaxBytes is the default cap on the bytes held by the
	// ended tasks kept.
	DefaultRetentionMaxBytes = 256 << 20
	// DepBytes is what each depends_on id counts, so that the cap bounds
	// what it holds while its task waits. The task's own list takes one
	// to three bytes of it (depIDs, ten at most). The dependency's dependents
	// take eight for the first task waiting on it (its head). From the second
	// on, the head becomes a list of 16 bytes, plus 32 in the index of lists.
	// That list grows by doubling and is compacted at half stale. In all it
	// takes up to about 50 bytes an id. With dependencies scattered over
	// the id space a dependent can also cost an 8 KiB block of heads
	// (dependents says why that stays a fraction of the task table).
	DepBytes = 48
)

// heldBytes is the rule of what a task counts toward the caps, in one
// place. It counts the bytes it holds whose size a client or an executor
// chose, as the task stores them.
//   - Args are its arg.* lines as kept. Each is the key with its prefix,
//     '=' and the escaped value, with LF between lines.
//   - Its task_type's name counts. Tasks of one type share one copy, but
//     each counts it, so a long name cannot carry what args may not.
//   - Its idempotency key counts, and the trace_id it was given. That is
//     "" when the main control derives one, which is not stored.
//   - The values of the task field table count (taskfields.go).
//   - DepBytes counts per depends_on id, deduplicated, as kept.
//   - The out.* lines (as kept) and the error text of its latest result or
//     end count. Before it ends, those of a failed attempt count, kept
//     until its next attempt is dispatched.
//
// The fixed cost of a task (about 160 bytes in the table) is not counted.
// --max-pending and --retention-max bound the number of tasks. Nor is the
// executor id of its latest dispatch, shared with the executor.
func heldBytes(typ, args, key, trace string, deps int, outs, errText string) int64 {
	// int64 throughout, since on 32-bit hosts a task's parts may pass an int.
	return int64(len(typ)) + int64(len(args)) + int64(len(key)) + int64(len(trace)) +
		DepBytes*int64(deps) + int64(len(outs)) + int64(len(errText))
}

// bytes is what t counts toward --max-pending-bytes until it ends, and
// toward --retention-max-bytes once it has (heldBytes).
func (t *task) bytes() int64 {
	x := t.x
	if x == nil {
		x = &noExtra
	}
	return heldBytes(t.typ.name, t.args, x.key, x.traceID, x.deps.len(), t.outs, x.errText) + x.fields.bytes()
}

// noExtra stands for the extra block of a task that has none.
var noExtra taskExtra

// countTaskBytes adds up the bytes of the tasks in the table, both those
// not yet ended and those ended.
func (c *Core) countTaskBytes() (pending, retained int64) {
	c.tasks.scan(0, 0, func(t *task) bool {
		if t.state.Terminal() {
			retained += t.bytes()
		} else {
			pending += t.bytes()
		}
		return true
	})
	return pending, retained
}

// PendingBytes is what the tasks not yet ended hold, as
// --max-pending-bytes counts it.
func (c *Core) PendingBytes() int64 { return c.pendingBytes }

// RetainedBytes is what the ended tasks kept hold, as
// --retention-max-bytes counts it.
func (c *Core) RetainedBytes() int64 { return c.retainedBytes }

// warnTaskBytes says, at the end of recovery, when the tasks found hold
// more than a cap lowered across a restart. Replay refuses nothing. The
// tasks not yet ended are kept, and submits get queue_full until enough
// of them end. The oldest ended tasks past the cap are forgotten at the
// first tick, as retention does past --retention-max.
func (c *Core) warnTaskBytes() {
	if limit := c.cfg.MaxPendingBytes; limit >= 0 && c.pendingBytes > int64(limit) {
		c.log.Warn("tasks not yet ended hold more than --max-pending-bytes: they are kept, and submits get queue_full until enough of them end",
			"pending_bytes", c.pendingBytes, "max_pending_bytes", limit, "tasks", c.nonTerminal())
	}
	if limit := c.cfg.RetentionMaxBytes; limit >= 0 && c.retainedBytes > int64(limit) {
		c.log.Warn("ended tasks kept hold more than --retention-max-bytes: the oldest ended are forgotten at the first tick",
			"retained_bytes", c.retainedBytes, "retention_max_bytes", limit, "tasks", c.terminal())
	}
}

// retainedOver reports whether the ended tasks kept, less freed bytes of
// them, hold more than --retention-max-bytes.
func (c *Core) retainedOver(freed int64) bool {
	limit := c.cfg.RetentionMaxBytes
	return limit >= 0 && c.retainedBytes-freed > int64(limit)
}

// warnSmallByteCaps says at start when a byte cap is below what one task
// may hold. A submit of a full frame of args would always be refused. Or
// an ended task would be forgotten, key and all, when the next one ends.
func (c *Core) warnSmallByteCaps() {
	if limit := c.cfg.MaxPendingBytes; limit >= 0 && limit < c.cfg.MaxFrame {
		c.log.Warn("--max-pending-bytes is below --max-frame: a submit whose args fill a frame is refused (bad_request)",
			"max_pending_bytes", limit, "max_frame", c.cfg.MaxFrame)
	}
	if limit := c.cfg.RetentionMaxBytes; limit >= 0 && limit < 2*c.cfg.MaxFrame {
		c.log.Warn("--retention-max-bytes is below twice --max-frame: an ended task with a frame of args and one of outputs is forgotten, and its key freed, as soon as another task ends",
			"retention_max_bytes", limit, "max_frame", c.cfg.MaxFrame)
	}
}

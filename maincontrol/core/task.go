package core

// task is one task's durable state. It is stored by value inside the chunks
// of the task table, so it must stay small (memory per pending task is a
// target) and everything it points to must be immutable: strings, and an
// extra block that is replaced, never modified, once shared with a frozen
// snapshot.
type task struct {
	id          uint64
	maxAttempts uint64
	timeoutMs   uint64
	createdMs   int64
	updatedMs   int64
	// dueMs is the time of the task's one pending timer: delay end
	// (pending, delayed), retry time (retrying, 0 while it waits behind the
	// retry cap), start deadline (dispatched) or task deadline (running).
	dueMs int64
	// seq orders tasks in queues: when the task became pending (FIFO within
	// a priority), or when it ended (retention, newest kept).
	seq      uint64
	version  uint32
	attempt  uint32
	typ      *taskType
	state    State
	priority uint8
	flags    taskFlags
	argKeys  uint16
	execID   string // executor of the latest dispatch, "" before the first
	traceID  string
	args     string // pre-encoded arg.* lines, joined by LF
	x        *taskExtra
}

type taskFlags uint8

const (
	// flagDelayed: pending, but its delay has not ended; not in a queue.
	flagDelayed taskFlags = 1 << iota
	// flagTakenBack: the latest dispatch is no longer current (start
	// timeout, task timeout, loss, bye, reconciliation).
	flagTakenBack
	// flagRequeued: back in pending after its dispatch was taken back before
	// it started; its next dispatch keeps the attempt.
	flagRequeued
	// flagArmed: retrying with its backoff running (counts toward the
	// retry cap); unset while it waits its turn.
	flagArmed
)

// taskExtra holds what most tasks lack. It is immutable once made: change
// it by building a new one.
type taskExtra struct {
	key     string   // idempotency key
	errText string   // error of the latest end or failed attempt
	out     string   // pre-encoded out.* lines of the latest result
	outKeys uint16   //
	deps    []uint64 // depends_on, deduplicated, in the order given
}

func (t *task) key() string {
	if t.x == nil {
		return ""
	}
	return t.x.key
}

func (t *task) errText() string {
	if t.x == nil {
		return ""
	}
	return t.x.errText
}

func (t *task) out() (string, int) {
	if t.x == nil {
		return "", 0
	}
	return t.x.out, int(t.x.outKeys)
}

func (t *task) deps() []uint64 {
	if t.x == nil {
		return nil
	}
	return t.x.deps
}

// setOutcome replaces the error and outputs, copying the extra block.
func (t *task) setOutcome(errText, out string, outKeys uint16) {
	if t.x == nil && errText == "" && out == "" {
		return
	}
	x := taskExtra{}
	if t.x != nil {
		x = *t.x
	}
	x.errText, x.out, x.outKeys = errText, out, outKeys
	if x.key == "" && x.errText == "" && x.out == "" && len(x.deps) == 0 {
		t.x = nil
		return
	}
	t.x = &x
}

// taskType is everything known about one task_type: its pending queues and
// the executors that take it and have a free slot.
type taskType struct {
	name    string
	queues  [10]fifo // index = priority; 9 is served first
	free    execHeap
	pending int // tasks in queues (valid entries), for quick emptiness
	dirty   bool
}

package core

// task is one task's durable state. It is stored by value in the task
// table's chunks, so it must stay small. Memory per pending task is a target.
// Everything it points to must be immutable. That means strings, and an
// extra block that is replaced, never modified, once a frozen snapshot
// shares it.
type task struct {
	id          uint64
	maxAttempts uint64
	timeoutMs   uint64
	createdMs   int64
	updatedMs   int64
	// dueMs is the time of the task's one pending timer. It is the delay end
	// when pending and delayed, or the retry time when retrying. A task that
	// waits behind the retry cap has 0. It is the start deadline when
	// dispatched, and the task deadline when running.
	dueMs int64
	// seq orders tasks in queues. It is when the task became pending (FIFO
	// within a priority). For retention it is when it ended (newest kept).
	seq uint64
	// version is the latest dispatch's number. The high 32 bits hold the run's
	// epoch, so no version repeats across a crash (spec section 7).
	version  uint64
	typ      *taskType
	attempt  uint32
	state    State
	priority uint8
	flags    taskFlags
	argKeys  uint16
	outKeys  uint16
	// startOff is when the latest dispatch started running, in ms after
	// createdMs, plus 1. It is 0 when not started, or started too late to
	// fit (durations.go). It fits the padding after outKeys.
	startOff uint32
	execID   string // executor of the latest dispatch, "" before the first
	args     string // pre-encoded arg.* lines, joined by LF
	// outs are the pre-encoded out.* lines of the latest result. Most tasks
	// end with some, so they live here rather than in taskExtra. That saves an
	// allocation per task, in the space a stored trace id took.
	outs string
	x    *taskExtra
}

type taskFlags uint8

const (
	// flagDelayed marks a pending task whose delay has not ended. It is in no queue.
	flagDelayed taskFlags = 1 << iota
	// flagTakenBack says the latest dispatch is no longer current. Causes are start
	// timeout, task timeout, loss, bye and reconciliation.
	flagTakenBack
	// flagRequeued marks a task back in pending after its dispatch was taken
	// back before it started. Its next dispatch keeps the attempt.
	flagRequeued
	// flagArmed marks a retrying task whose backoff runs. It counts toward the
	// retry cap. It is unset while the task waits its turn.
	flagArmed
	// flagReleased says every dependency had succeeded when it last left
	// waiting, or it never waited. A requeue reads it to tell whether a
	// dependency forgotten since had succeeded (requeue.go).
	flagReleased
	// flagDepFailed says a when=failed task saw a dependency end failed or
	// cancelled. It remembers one that retention forgot since (steps.go).
	flagDepFailed
	// flagTolerated marks a task that ended failed or cancelled while a waiting
	// dependent went on waiting. A requeue links such dependents back (steps.go).
	flagTolerated
)

// taskExtra holds what most tasks lack. It is immutable once made, so
// change it by building a new one.
type taskExtra struct {
	key     string    // idempotency key
	errText string    // error of the latest end or failed attempt
	traceID string    // the submitter's trace_id; "" derives one (trace.go)
	deps    depIDs    // depends_on, deduplicated, in the order given
	fields  fieldVals // the task field table's values (taskfields.go)
	// requeues counts the requeues of the task. reason is the latest's.
	requeues uint64
	reason   string
}

// shared returns x as a task's extra block, or nil when all is empty.
func (x taskExtra) shared() *taskExtra {
	if x.key == "" && x.errText == "" && x.traceID == "" && x.deps.len() == 0 && x.fields.empty() &&
		x.requeues == 0 && x.reason == "" {
		return nil
	}
	// A copy, not &x. Taking x's address would move it to the heap on every
	// call, an allocation per task even when nil is returned.
	p := new(taskExtra)
	*p = x
	return p
}

// newExtra returns the extra block of a task being made, for writing. It
// makes one when the task has none. A block made here is no snapshot's yet.
func (t *task) newExtra() *taskExtra {
	if t.x == nil {
		t.x = new(taskExtra)
	}
	return t.x
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

func (t *task) out() (string, int) { return t.outs, int(t.outKeys) }

func (t *task) ownTrace() string {
	if t.x == nil {
		return ""
	}
	return t.x.traceID
}

func (t *task) deps() depIDs {
	if t.x == nil {
		return depIDs{}
	}
	return t.x.deps
}

// setOutcome replaces the error and outputs. A new error copies the extra
// block.
func (t *task) setOutcome(errText, out string, outKeys uint16) {
	t.outs, t.outKeys = out, outKeys
	if t.errText() != errText {
		x := noExtra
		if t.x != nil {
			x = *t.x
		}
		x.errText = errText
		t.x = x.shared()
	}
}

func (t *task) requeues() uint64 {
	if t.x == nil {
		return 0
	}
	return t.x.requeues
}

func (t *task) requeueReason() string {
	if t.x == nil {
		return ""
	}
	return t.x.reason
}

// withRequeue returns x with the requeue count and reason set. It builds a new
// block, as x may be shared with a frozen snapshot. x may be nil.
func (x *taskExtra) withRequeue(n uint64, reason string) *taskExtra {
	if n == 0 && reason == "" {
		return x
	}
	var y taskExtra
	if x != nil {
		y = *x
	}
	y.requeues, y.reason = n, reason
	return &y
}

// taskType is everything known about one task_type. It holds the pending
// queues and the executors that take it and have a free slot.
type taskType struct {
	name string
	// queues[p] holds the tasks of priority p, and 9 is served first. The first
	// task of a priority makes its queue. A type is often known with no task
	// at all, since an executor may register 1,024 of its own. Or its tasks
	// share one priority. Ten queues in place would cost 480 bytes a type.
	queues  [10]*fifo
	free    execHeap
	pending int // tasks in queues (valid entries), for quick emptiness
	dirty   bool
	// top is at least the highest priority whose queue holds entries (-1 for
	// none). Picking the next task starts there, rather than walking ten queues
	// when most tasks share one priority.
	top int8
	// refs counts the known tasks of this type and the executors that
	// registered it. At 0 the type is forgotten (releaseType), so names
	// seen once do not stay in memory for good.
	refs int
	mark uint64 // Core.typeMark when last seen in the register being applied
	// urgency places the type in dispatchDirty's heap (urgentTypes).
	urgency urgency
	// counts are its known tasks by state, for type_list and max_running.
	counts [NumStates + 1]int32
	// paused means none of its tasks is dispatched (pause.go).
	paused bool
	// rate holds its dispatches of the last second. The first dispatch under a
	// rate makes it. Each type has its own, listed or not.
	rate *rateWindow
}

// active counts its dispatched and running tasks (policy max_running).
func (tt *taskType) active() int { return int(tt.counts[Dispatched] + tt.counts[Running]) }

// enqueue appends a pending task's entry to the queue of its priority.
func (tt *taskType) enqueue(t *task) {
	q := tt.queues[t.priority]
	if q == nil {
		q = new(fifo)
		tt.queues[t.priority] = q
	}
	q.push(qent{id: t.id, ver: t.version})
	tt.top = max(tt.top, int8(t.priority))
}

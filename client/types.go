package client

import "time"

// SubmitRequest is a `submit`. Zero values are not sent, so the main
// control's defaults apply (priority 0, max_attempts 3, no timeout, no
// delay). Durations are sent in milliseconds, rounded up.
type SubmitRequest struct {
	Type        string            // task_type, required
	Args        map[string]string // arg.* (names: a-z 0-9 _ . -, at most 60 bytes)
	Priority    int               // 0-9, 9 most urgent
	MaxAttempts int               // at least 1 when set
	Timeout     time.Duration     // per attempt, from `started`
	Delay       time.Duration     // before the first dispatch
	Key         string            // idempotency key
	TraceID     string
	DependsOn   []uint64 // ids that must succeed first
	Label       string   // free text for people, at most 256 bytes
	// Optional: when the task fails or is cancelled, its dependents run
	// as if it had succeeded. Needs the runs feature.
	Optional bool
	// When "failed": the task runs only once every dependency has ended
	// and one failed or was cancelled, else it ends cancelled with error
	// "skipped". Needs DependsOn and the runs feature.
	When string
}

// Submitted is the `submitted` reply. The JSON names of this and the
// other replies are the wire's keys where a field is one key (task_id,
// state_version), as `apollo11 ... --json` prints them; times are RFC 3339
// text (created, updated) or nanoseconds (uptime_ns), and the families of
// keys are objects (tasks for tasks.<state>, out for out.*, extra for the
// keys no field holds).
type Submitted struct {
	ID        uint64 `json:"task_id"`
	Duplicate bool   `json:"duplicate"` // Key matched a task still known: no new task was made
}

// Done is the `done` notice of SubmitWait: the task reached a terminal
// state.
type Done struct {
	ID    uint64            `json:"task_id"`
	State string            `json:"state"` // succeeded, failed or cancelled
	Out   map[string]string `json:"out,omitempty"`
	Error string            `json:"error,omitempty"`
}

// TaskState is the `task_state` reply of Query.
type TaskState struct {
	ID          uint64            `json:"task_id"`
	Version     uint64            `json:"version"`
	State       string            `json:"state"`
	Attempt     uint64            `json:"attempt"`
	MaxAttempts uint64            `json:"max_attempts"`
	Type        string            `json:"task_type"`
	ExecutorID  string            `json:"executor_id,omitempty"` // "" when not dispatched
	Error       string            `json:"error,omitempty"`
	Out         map[string]string `json:"out,omitempty"`
	Created     time.Time         `json:"created"`
	Updated     time.Time         `json:"updated"`
	TraceID     string            `json:"trace_id"`
	// Requeues counts the task's requeues; RequeueReason is the latest's.
	Requeues      uint64 `json:"requeues,omitempty"`
	RequeueReason string `json:"requeue_reason,omitempty"`
	Label         string `json:"label,omitempty"`
	Optional      bool   `json:"optional,omitempty"`
	When          string `json:"when,omitempty"` // "failed" or ""
	// Progress and ProgressNote are the current dispatch's latest
	// progress, while dispatched or running; QueuedMs and RunMs the
	// durations of an ended task (protocol section 8.8). nil: not shown.
	Progress     *uint64 `json:"progress,omitempty"`
	ProgressNote string  `json:"progress_note,omitempty"`
	QueuedMs     *uint64 `json:"queued_ms,omitempty"`
	RunMs        *uint64 `json:"run_ms,omitempty"`
	// RunID and Step name the run a step task belongs to, RollbackOf the
	// step task a compensation undoes (protocol section 8.10). 0, "": none.
	RunID      uint64 `json:"run_id,omitempty"`
	Step       string `json:"step,omitempty"`
	RollbackOf uint64 `json:"rollback_of,omitempty"`
}

// Stats is the `stats` reply.
type Stats struct {
	Tasks        map[string]uint64 `json:"tasks"` // per state, all eight present
	Executors    uint64            `json:"executors"`
	StateVersion uint64            `json:"state_version"`
	Uptime       time.Duration     `json:"uptime_ns"`
	Extra        map[string]string `json:"extra"` // every other key, for forward compatibility
}

// textFields are the text keys of submit and task_state, each with the
// field of SubmitRequest and of TaskState that holds it (nil: not sent, or
// not shown). A new text key of a task is a field in each and a row here.
var textFields = []struct {
	key   string
	req   func(*SubmitRequest) string
	state func(*TaskState) *string
}{
	{"key", func(r *SubmitRequest) string { return r.Key }, nil},
	{"trace_id", func(r *SubmitRequest) string { return r.TraceID }, func(s *TaskState) *string { return &s.TraceID }},
	{"executor_id", nil, func(s *TaskState) *string { return &s.ExecutorID }},
	{"error", nil, func(s *TaskState) *string { return &s.Error }},
	{"label", func(r *SubmitRequest) string { return r.Label }, func(s *TaskState) *string { return &s.Label }},
	{"when", func(r *SubmitRequest) string { return r.When }, func(s *TaskState) *string { return &s.When }},
}

// millis rounds d up to whole milliseconds, so that a positive duration
// never becomes 0 ("none").
func millis(d time.Duration) uint64 {
	return uint64((d + time.Millisecond - 1) / time.Millisecond)
}

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
}

// Submitted is the `submitted` reply.
type Submitted struct {
	ID        uint64
	Duplicate bool // Key matched a task still known: no new task was made
}

// Done is the `done` notice of SubmitWait: the task reached a terminal
// state.
type Done struct {
	ID    uint64
	State string // succeeded, failed or cancelled
	Out   map[string]string
	Error string
}

// TaskState is the `task_state` reply of Query.
type TaskState struct {
	ID, Version          uint64
	State                string
	Attempt, MaxAttempts uint64
	Type                 string
	ExecutorID           string // "" when not dispatched
	Error                string
	Out                  map[string]string
	Created, Updated     time.Time
	TraceID              string
}

// Stats is the `stats` reply.
type Stats struct {
	Tasks        map[string]uint64 // per state, all eight present
	Executors    uint64
	StateVersion uint64
	Uptime       time.Duration
	Extra        map[string]string // every other key, for forward compatibility
}

// millis rounds d up to whole milliseconds, so that a positive duration
// never becomes 0 ("none").
func millis(d time.Duration) uint64 {
	return uint64((d + time.Millisecond - 1) / time.Millisecond)
}

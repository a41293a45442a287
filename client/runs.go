package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// The run requests of protocol section 8.10 (feature group runs). A run
// is a graph of steps that the main control keeps as one object.

// RunRequest is a `run_submit`. Steps come in dependency order. Each
// depends only on steps listed before it.
type RunRequest struct {
	Name    string // required, at most 128 bytes
	Key     string // idempotency key among runs; "" for none
	TraceID string // "": each task gets its own
	Steps   []RunStepRequest
}

// RunStepRequest is one step of a run. Zero values are not sent.
type RunStepRequest struct {
	ID   string // A-Z a-z 0-9 _ -, at most 64 bytes, unique in the run
	Type string
	// Args may hold references ${steps.<id>.out.<k>}. $${ is a literal ${.
	Args        map[string]string
	DependsOn   []string // step ids listed before this one
	Priority    int
	MaxAttempts int
	Timeout     time.Duration
	Delay       time.Duration
	Label       string
	Optional    bool   // its failure cancels none of its dependents
	When        string // "" or "failed": run only if a dependency failed
	Compensate  *RunCompensate
}

// RunCompensate is the task that undoes a step when its run fails.
type RunCompensate struct {
	Type string // "": the step's own type
	Args map[string]string
}

// RunSubmitted is the `run_submitted` reply.
type RunSubmitted struct {
	ID        uint64   `json:"run_id"`
	TaskIDs   []uint64 `json:"task_ids"` // in step order
	Duplicate bool     `json:"duplicate"`
}

// RunDone is the `run_done` notice that the run reached a final state.
type RunDone struct {
	ID    uint64 `json:"run_id"`
	State string `json:"state"`
}

// The run states.
const (
	RunRunning        = "running"
	RunSucceeded      = "succeeded"
	RunFailed         = "failed"
	RunCancelled      = "cancelled"
	RunCompensating   = "compensating"
	RunRolledBack     = "rolled_back"
	RunRollbackFailed = "rollback_failed"
)

// RunEnded reports whether a run state is final.
func RunEnded(state string) bool { return state != RunRunning && state != RunCompensating }

// RunState is the `run_state` reply of RunQuery.
type RunState struct {
	ID      uint64         `json:"run_id"`
	Name    string         `json:"name"`
	Key     string         `json:"key,omitempty"`
	State   string         `json:"state"`
	Steps   []RunStepState `json:"steps"`
	Created time.Time      `json:"created"`
	Updated time.Time      `json:"updated"`
	Resumes uint64         `json:"resumes"`
	TraceID string         `json:"trace_id,omitempty"`
}

// RunStepState is one step in a RunState.
type RunStepState struct {
	ID     string `json:"id"`
	TaskID uint64 `json:"task_id"`
	// State is "" once retention forgot the task.
	State    string `json:"state,omitempty"`
	Error    string `json:"error,omitempty"`
	Optional bool   `json:"optional,omitempty"`
	When     string `json:"when,omitempty"`
	// The compensation's task, once the step has one.
	CompTaskID uint64 `json:"comp_task_id,omitempty"`
	CompState  string `json:"comp_state,omitempty"`
	CompError  string `json:"comp_error,omitempty"`
}

// RunStepInfo is the `run_step` reply of RunQueryStep.
type RunStepInfo struct {
	RunID  uint64 `json:"run_id"`
	Step   string `json:"step"`
	TaskID uint64 `json:"task_id"`
	State  string `json:"state,omitempty"`
	Error  string `json:"error,omitempty"`
	// Args are the template before the step's release, filled in after.
	Args map[string]string `json:"args,omitempty"`
}

// RunResumed is the `run_resumed` reply.
type RunResumed struct {
	ID       uint64   `json:"run_id"`
	State    string   `json:"state"`
	Requeued []string `json:"requeued"` // step ids, in step order
}

// RunRef names a run by its id or, when ID is 0, by its key.
type RunRef struct {
	ID  uint64
	Key string
}

func (r RunRef) fill(b *wire.Builder) {
	if r.ID != 0 {
		b.Uint("run_id", r.ID)
	} else {
		b.Str("key", r.Key)
	}
}

func (r RunRef) String() string {
	if r.ID != 0 {
		return "run " + strconv.FormatUint(r.ID, 10)
	}
	return "run with key " + strconv.Quote(r.Key)
}

// validate checks what run_submit would refuse before sending.
func (r RunRequest) validate() error {
	if r.Name == "" {
		return errors.New("run_submit: Name is required")
	}
	if len(r.Steps) == 0 {
		return errors.New("run_submit: no steps")
	}
	for _, s := range r.Steps {
		sub := SubmitRequest{Type: s.Type, Priority: s.Priority, MaxAttempts: s.MaxAttempts, Timeout: s.Timeout, Delay: s.Delay}
		if err := sub.Validate(); err != nil {
			return fmt.Errorf("run_submit: step %s: %w", s.ID, err)
		}
		if s.When != "" && s.When != "failed" {
			return fmt.Errorf("run_submit: step %s: When %q is not failed", s.ID, s.When)
		}
	}
	return nil
}

func (r RunRequest) fill(wait bool) func(*wire.Builder) {
	return func(b *wire.Builder) {
		b.Str("name", r.Name)
		if r.Key != "" {
			b.Str("key", r.Key)
		}
		if r.TraceID != "" {
			b.Str("trace_id", r.TraceID)
		}
		b.Uint("steps", uint64(len(r.Steps)))
		for i, s := range r.Steps {
			p := "step." + strconv.Itoa(i) + "."
			b.Str(p+"id", s.ID)
			b.Str(p+"type", s.Type)
			for _, k := range slices.Sorted(maps.Keys(s.Args)) {
				b.PrefixStr(p+"arg.", k, s.Args[k])
			}
			if len(s.DependsOn) > 0 {
				b.List(p+"depends_on", s.DependsOn)
			}
			if s.Priority > 0 {
				b.Uint(p+"priority", uint64(s.Priority))
			}
			if s.MaxAttempts > 0 {
				b.Uint(p+"max_attempts", uint64(s.MaxAttempts))
			}
			if s.Timeout > 0 {
				b.Uint(p+"timeout_ms", millis(s.Timeout))
			}
			if s.Delay > 0 {
				b.Uint(p+"delay_ms", millis(s.Delay))
			}
			if s.Label != "" {
				b.Str(p+"label", s.Label)
			}
			if s.Optional {
				b.Bool(p+"optional", true)
			}
			if s.When != "" {
				b.Str(p+"when", s.When)
			}
			if c := s.Compensate; c != nil {
				// The type is always sent. A compensation without args
				// still needs one key to exist.
				b.Str(p+"compensate.type", cmp.Or(c.Type, s.Type))
				for _, k := range slices.Sorted(maps.Keys(c.Args)) {
					b.PrefixStr(p+"compensate.arg.", k, c.Args[k])
				}
			}
		}
		if wait {
			b.Bool("wait", true)
		}
	}
}

// kind is idempotent with a key. Sent twice, the key returns the run the
// first made.
func (r RunRequest) kind() kind {
	if r.Key != "" {
		return idempotent
	}
	return oneShot
}

// RunSubmit sends `run_submit` and returns once the run and all its step
// tasks are durable. A keyed run the main control still keeps is
// returned with Duplicate set, whatever its state.
func (c *Client) RunSubmit(ctx context.Context, r RunRequest) (RunSubmitted, error) {
	if err := r.validate(); err != nil {
		return RunSubmitted{}, err
	}
	m, err := c.roundTrip(ctx, wire.KindRunSubmit, wire.KindRunSubmitted, r.kind(), r.fill(false))
	if err != nil {
		return RunSubmitted{}, err
	}
	return parseRunSubmitted(m)
}

func parseRunSubmitted(m *wire.Message) (RunSubmitted, error) {
	var s RunSubmitted
	var err error
	if s.ID, err = m.Uint("run_id"); err != nil {
		return s, fmt.Errorf("run_submit: bad run_submitted: %w", err)
	}
	if s.Duplicate, err = m.BoolOr("duplicate", false); err != nil {
		return s, fmt.Errorf("run_submit: bad run_submitted: %w", err)
	}
	ids, err := m.List("task_ids")
	if err != nil {
		return s, fmt.Errorf("run_submit: bad run_submitted: %w", err)
	}
	for _, id := range ids {
		n, err := strconv.ParseUint(id, 10, 64)
		if err != nil {
			return s, fmt.Errorf("run_submit: bad run_submitted task_ids: %w", err)
		}
		s.TaskIDs = append(s.TaskIDs, n)
	}
	return s, nil
}

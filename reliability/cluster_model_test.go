package reliability_test

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The cluster group checks what clients saw against a sequential model
// of one keyed task, with porcupine: every history of submits, queries
// and results the cluster gave must be one a single main control could
// have given. The history is split by idempotency key, one task per key.

// opKind is what a client asked.
type opKind uint8

const (
	opSubmit opKind = iota + 1 // submit with an idempotency key
	opQuery                    // query of a task id
	opResult                   // an executor's result for a dispatch
)

func (k opKind) String() string {
	switch k {
	case opSubmit:
		return "submit"
	case opQuery:
		return "query"
	case opResult:
		return "result"
	}
	return "op?"
}

// taskOp is an operation's input. Key names the task in every kind: a
// query or a result carries the key its task was submitted with.
type taskOp struct {
	Kind opKind
	Key  string
	ID   uint64 // query and result: the task asked about
}

// taskOut is an operation's output.
type taskOut struct {
	// Unknown: the connection was lost before the reply, so the request
	// may or may not have taken effect.
	Unknown   bool
	ID        uint64 // submit: the task id replied
	Duplicate bool   // submit: duplicate=true
	State     string // query: the task's state, or "unknown_task"
	Accepted  bool   // result: result_ack accepted=true
}

// lostOut marks a reply that never came.
var lostOut = taskOut{Unknown: true}

// hop builds an operation of client c over [call, ret]; ret < 0 means it
// never returned.
func hop(c int, call, ret int64, in taskOp, out taskOut) porcupine.Operation {
	if ret < 0 {
		ret = math.MaxInt64
	}
	return porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret}
}

func subOp(key string) taskOp               { return taskOp{Kind: opSubmit, Key: key} }
func queryOp(key string, id uint64) taskOp  { return taskOp{Kind: opQuery, Key: key, ID: id} }
func resultOp(key string, id uint64) taskOp { return taskOp{Kind: opResult, Key: key, ID: id} }
func madeOut(id uint64) taskOut             { return taskOut{ID: id} }
func dupOut(id uint64) taskOut              { return taskOut{ID: id, Duplicate: true} }
func stateOut(s string) taskOut             { return taskOut{State: s} }
func ackOut(accepted bool) taskOut          { return taskOut{Accepted: accepted} }

// idUnknown is a task made by a submit whose reply was lost.
const idUnknown = math.MaxUint64

// taskState is the model's state of one key's task.
type taskState struct {
	ID       uint64 // 0: no task yet; idUnknown: made, id not yet seen
	Accepted bool   // a result was accepted: the task succeeded
	Ended    bool   // failed or cancelled without an accepted result
}

// stepTask is the sequential specification of one keyed task.
func stepTask(s taskState, in taskOp, out taskOut) (bool, taskState) {
	switch in.Kind {
	case opSubmit:
		if out.Unknown {
			if s.ID == 0 {
				s.ID = idUnknown
			}
			return true, s
		}
		if out.ID == 0 || out.ID == idUnknown {
			return false, s
		}
		switch s.ID {
		case 0: // a new task
			if out.Duplicate {
				return false, s
			}
		case idUnknown: // the key was taken by a submit whose reply was lost
			if !out.Duplicate {
				return false, s
			}
		default: // one id per key, always
			if !out.Duplicate || out.ID != s.ID {
				return false, s
			}
		}
		s.ID = out.ID
		return true, s
	case opQuery:
		if out.Unknown {
			return true, s
		}
		if out.State == "unknown_task" {
			return s.ID == 0, s
		}
		if !s.bind(in.ID) {
			return false, s
		}
		switch out.State {
		case "succeeded":
			return s.Accepted, s
		case "failed", "cancelled":
			if s.Accepted {
				return false, s
			}
			s.Ended = true
			return true, s
		default: // not ended yet
			return !s.Accepted && !s.Ended, s
		}
	case opResult:
		if !s.bind(in.ID) {
			return false, s
		}
		switch {
		case out.Unknown:
			// Accepted or refused: placed where it was accepted, or
			// after everything (no visible effect).
			if !s.Ended {
				s.Accepted = true
			}
			return true, s
		case out.Accepted:
			if s.Accepted || s.Ended {
				return false, s // a task has at most one accepted result
			}
			s.Accepted = true
			return true, s
		default:
			return true, s // refused (stale): changes nothing
		}
	}
	return false, s
}

// bind checks that a task asked about by id is this key's task, learning
// the id of a task whose submit reply was lost.
func (s *taskState) bind(id uint64) bool {
	switch s.ID {
	case 0:
		return false // no task yet
	case idUnknown:
		s.ID = id
		return true
	}
	return s.ID == id
}

// taskModel is the porcupine model: one partition per key.
var taskModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(taskOp).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		sort.Strings(keys)
		parts := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, byKey[k])
		}
		return parts
	},
	Init: func() any { return taskState{} },
	Step: func(state, input, output any) (bool, any) {
		return stepTask(state.(taskState), input.(taskOp), output.(taskOut))
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(taskOp), output.(taskOut)
		reply := ""
		switch {
		case out.Unknown:
			reply = "lost"
		case in.Kind == opSubmit:
			reply = fmt.Sprintf("task %d duplicate=%v", out.ID, out.Duplicate)
		case in.Kind == opQuery:
			reply = out.State
		default:
			reply = fmt.Sprintf("accepted=%v", out.Accepted)
		}
		return fmt.Sprintf("%s %s #%d -> %s", in.Kind, in.Key, in.ID, reply)
	},
	DescribeState: func(state any) string {
		s := state.(taskState)
		return fmt.Sprintf("id=%d accepted=%v ended=%v", s.ID, s.Accepted, s.Ended)
	},
}

// history records the operations of every client of a test, with their
// call and return times on one monotonic clock.
type history struct {
	mu    sync.Mutex
	start time.Time
	ops   []porcupine.Operation
}

func newHistory() *history { return &history{start: time.Now()} }

// now is the history's clock: nanoseconds since it began.
func (h *history) now() int64 { return int64(time.Since(h.start)) }

// add records an operation called at call that returned out now. One
// whose outcome is unknown never returned: it may take effect at any
// time after its call.
func (h *history) add(client int, in taskOp, call int64, out taskOut) {
	ret := h.now()
	if out.Unknown {
		ret = math.MaxInt64
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// operations returns a copy of what was recorded.
func (h *history) operations() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]porcupine.Operation(nil), h.ops...)
}

// checkLinearizable checks ops against taskModel. On a violation it
// writes porcupine's visualization into dir (kept after the test: give
// os.TempDir()) and names it. A check that does not finish within
// timeout is an error too.
func checkLinearizable(t testing.TB, ops []porcupine.Operation, timeout time.Duration, dir string) porcupine.CheckResult {
	t.Helper()
	res, info := porcupine.CheckOperationsVerbose(taskModel, ops, timeout)
	switch res {
	case porcupine.Ok:
	case porcupine.Illegal:
		path := filepath.Join(dir, fmt.Sprintf("apollo11-linearizability-%d.html", time.Now().UnixNano()))
		if err := porcupine.VisualizePath(taskModel, info, path); err != nil {
			t.Errorf("the history of %d operations is not linearizable (visualization failed: %v)", len(ops), err)
		} else {
			t.Errorf("the history of %d operations is not linearizable; see %s", len(ops), path)
		}
	default:
		t.Errorf("the linearizability check of %d operations did not finish within %v", len(ops), timeout)
	}
	return res
}

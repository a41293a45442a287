package core

import "fmt"

// State is a task state (spec section 6).
type State uint8

// The eight task states. The zero value is not a state.
const (
	Waiting State = 1 + iota
	Pending
	Dispatched
	Running
	Retrying
	Succeeded
	Failed
	Cancelled
)

// NumStates is the number of task states.
const NumStates = 8

// AllStates lists the states in the spec's order.
var AllStates = [NumStates]State{Waiting, Pending, Dispatched, Running, Retrying, Succeeded, Failed, Cancelled}

var stateNames = [...]string{"", "waiting", "pending", "dispatched", "running", "retrying", "succeeded", "failed", "cancelled"}

func (s State) String() string {
	if int(s) < len(stateNames) && s != 0 {
		return stateNames[s]
	}
	return "invalid"
}

// MarshalText writes the state's name, so that JSON (inspect --json)
// says "succeeded", not 6.
func (s State) MarshalText() ([]byte, error) {
	if s == 0 || int(s) >= len(stateNames) {
		return nil, fmt.Errorf("invalid task state %d", uint8(s))
	}
	return []byte(stateNames[s]), nil
}

// ParseState parses a state name.
func ParseState(name string) (State, bool) {
	for i := 1; i < len(stateNames); i++ {
		if stateNames[i] == name {
			return State(i), true
		}
	}
	return 0, false
}

// Terminal reports whether nothing may leave s.
func (s State) Terminal() bool { return s == Succeeded || s == Failed || s == Cancelled }

// legal is the transition table of spec section 6. Every state change in the
// core is checked against it.
var legal = [NumStates + 1][NumStates + 1]bool{
	// waiting -> failed: a step whose output references find no output
	// (protocol section 8.10).
	Waiting:    {Pending: true, Cancelled: true, Failed: true},
	Pending:    {Dispatched: true, Cancelled: true},
	Dispatched: {Running: true, Pending: true, Cancelled: true},
	Running:    {Succeeded: true, Failed: true, Retrying: true, Cancelled: true},
	Retrying:   {Pending: true, Cancelled: true},
}

// Legal reports whether the table allows from -> to.
func Legal(from, to State) bool {
	if from == 0 || to == 0 || from > NumStates || to > NumStates {
		return false
	}
	return legal[from][to]
}

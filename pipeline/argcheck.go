package pipeline

import (
	"maps"

	"github.com/apollo11/apollo11/wire"
)

// ArgIssue is one way a step's args miss what its type's handler
// describes (docs/protocol.md section 8.11).
type ArgIssue struct {
	Step   string `json:"step"`
	Type   string `json:"task_type"`
	Arg    string `json:"arg,omitempty"`
	Reason string `json:"reason"`
	// Warning: advice only. An arg the schema does not name, or a type
	// no executor describes, whose args cannot be checked.
	Warning bool `json:"warning,omitempty"`
}

func (i ArgIssue) String() string {
	word := "error"
	if i.Warning {
		word = "warning"
	}
	s := word + ": step " + i.Step + " (" + i.Type + ")"
	if i.Arg != "" {
		s += ": arg " + i.Arg
	}
	return s + ": " + i.Reason
}

// CheckArgs checks every step's args against schemas, the argument
// schema its type's handler describes, by task type: a required arg
// missing or a value that does not parse as its kind is an error, an arg
// the schema does not name a warning. A type without a schema gets one
// warning: its args are not checked. An arg that refers to an earlier
// step's output is present, but its kind waits for the value. A step's
// compensate args are not checked: the executor library does not check
// a compensation's either (protocol section 8.11). Issues come in step
// order.
func CheckArgs(p *Plan, schemas map[string][]wire.Arg) []ArgIssue {
	var out []ArgIssue
	unchecked := map[string]bool{}
	for _, s := range p.Steps {
		schema, ok := schemas[s.Type]
		if !ok || len(schema) == 0 {
			if !unchecked[s.Type] {
				unchecked[s.Type] = true
				out = append(out, ArgIssue{Step: s.ID, Type: s.Type, Warning: true,
					Reason: "no connected executor describes this type's args: not checked"})
			}
			continue
		}
		args := maps.Clone(s.Args)
		for _, r := range s.Refs {
			if spec, ok := wire.ArgFor(schema, r.Arg); ok {
				args[r.Arg] = sampleOf(spec.Kind)
			}
		}
		for _, pr := range wire.CheckArgs(schema, args) {
			out = append(out, ArgIssue{Step: s.ID, Type: s.Type, Arg: pr.Arg, Reason: pr.Reason, Warning: pr.Unknown})
		}
	}
	return out
}

// sampleOf is a value every check of kind accepts: it stands for a value
// known only when the step runs.
func sampleOf(kind string) string {
	switch kind {
	case wire.ArgInt, wire.ArgFloat:
		return "0"
	case wire.ArgBool:
		return "true"
	case wire.ArgDuration:
		return "1s"
	case wire.ArgJSON:
		return "null"
	}
	return ""
}

// Errors counts the issues that are not warnings.
func Errors(issues []ArgIssue) int {
	n := 0
	for _, i := range issues {
		if !i.Warning {
			n++
		}
	}
	return n
}

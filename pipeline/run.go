package pipeline

import (
	"fmt"
	"maps"

	"github.com/apollo11/apollo11/client"
)

// maxRunSteps is the most steps one run holds (protocol section 8.10).
const maxRunSteps = 100

// RunFits says why the main control could not hold the plan as one run,
// or returns nil. A run holds at most 100 steps, and its step ids have no
// dot (a pipeline file allows one).
func (p *Plan) RunFits() error {
	if len(p.Steps) > maxRunSteps {
		return fmt.Errorf("pipeline %s has %d steps: a run holds at most %d", p.Name, len(p.Steps), maxRunSteps)
	}
	for _, s := range p.Steps {
		if !validRunStepID(s.ID) {
			return fmt.Errorf("pipeline %s: step id %q: a run's step ids are A-Z a-z 0-9 _ - (no dot)", p.Name, s.ID)
		}
	}
	return nil
}

func validRunStepID(id string) bool {
	for i := 0; i < len(id); i++ {
		if id[i] == '.' {
			return false
		}
	}
	return validStepID(id)
}

// RunRequest returns the plan as one run_submit, its steps in plan order
// (each after its dependencies). Args go as templates, so the main
// control fills in the output references. The file's key is the run's.
func (p *Plan) RunRequest(traceID string) (client.RunRequest, error) {
	if err := p.RunFits(); err != nil {
		return client.RunRequest{}, err
	}
	r := client.RunRequest{Name: p.Name, Key: p.Key, TraceID: traceID}
	for _, s := range p.Steps {
		rs := client.RunStepRequest{ID: s.ID, Type: s.Type, Args: maps.Clone(s.tmpl), DependsOn: s.DependsOn,
			Priority: s.Priority, MaxAttempts: s.MaxAttempts, Timeout: s.Timeout, Delay: s.Delay,
			Optional: s.Optional, When: s.When}
		if c := s.Compensate; c != nil {
			rs.Compensate = &client.RunCompensate{Type: c.Type, Args: maps.Clone(c.tmpl)}
		}
		r.Steps = append(r.Steps, rs)
	}
	return r, nil
}

// NewTraceID returns a trace id for a run: 32 random hex digits.
func NewTraceID() string { return newTraceID() }

// RunOf records a plan submitted as a run, for `pipeline status`.
func RunOf(p *Plan, sub client.RunSubmitted, traceID string) *Run {
	run := &Run{Name: p.Name, RunID: sub.ID, Key: p.Key, TraceID: traceID}
	for i, s := range p.Steps {
		step := RunStep{ID: s.ID, DependsOn: s.DependsOn}
		if i < len(sub.TaskIDs) {
			step.TaskID = sub.TaskIDs[i]
		}
		run.Steps = append(run.Steps, step)
	}
	return run
}

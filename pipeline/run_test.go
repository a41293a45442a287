package pipeline_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/pipeline"
)

// A plan becomes one run_submit: steps in dependency order, the file's
// key as the run's, args as templates for the main control.
func TestPlan_RunRequest(t *testing.T) {
	p, err := pipeline.Parse(strings.NewReader(`
name: r
key: k-${d}
vars: {d: "1"}
steps:
  - {id: b, type: echo, depends_on: [a], args: {p: "${steps.a.out.p}", lit: "$${HOME}"}, optional: true, timeout: 2s}
  - {id: a, type: exec, compensate: {args: {u: "${steps.a.out.p}"}}, max_attempts: 2}
  - {id: c, type: echo, depends_on: [b], when: failed, priority: 3, delay: 1s}
`), nil)
	require.NoError(t, err)
	r, err := p.RunRequest("t-1")
	require.NoError(t, err)
	assert.Equal(t, client.RunRequest{Name: "r", Key: "k-1", TraceID: "t-1", Steps: []client.RunStepRequest{
		{ID: "a", Type: "exec", Args: map[string]string{}, MaxAttempts: 2,
			Compensate: &client.RunCompensate{Type: "exec", Args: map[string]string{"u": "${steps.a.out.p}"}}},
		{ID: "b", Type: "echo", DependsOn: []string{"a"}, Args: map[string]string{"p": "${steps.a.out.p}", "lit": "$${HOME}"},
			Optional: true, Timeout: 2 * time.Second},
		{ID: "c", Type: "echo", DependsOn: []string{"b"}, Args: map[string]string{}, When: "failed", Priority: 3, Delay: time.Second},
	}}, r)
}

// What a run cannot hold is refused with the reason: a dot in a step id
// (a pipeline file allows one), or more than 100 steps.
func TestPlan_RunFits(t *testing.T) {
	p := mustPlan(t, "name: x\nsteps: [{id: a.b, type: echo}]")
	assert.ErrorContains(t, p.RunFits(), `step id "a.b": a run's step ids are A-Z a-z 0-9 _ - (no dot)`)
	var b strings.Builder
	b.WriteString("name: x\nsteps:\n")
	for i := range 101 {
		b.WriteString("  - {id: s" + strconv.Itoa(i) + ", type: echo}\n")
	}
	p = mustPlan(t, b.String())
	assert.ErrorContains(t, p.RunFits(), "has 101 steps: a run holds at most 100")
	_, err := p.RunRequest("")
	assert.Error(t, err)
}

// Submitting step by step refuses what only a run can honour, before
// anything is sent: a skip or a reference nothing would fill in.
func TestSubmitEach_RefusesRunOnly(t *testing.T) {
	c := system(t, 1)
	p := mustPlan(t, "name: x\nsteps:\n  - {id: a, type: echo}\n  - {id: b, type: echo, depends_on: [a], optional: true, args: {p: '${steps.a.out.p}'}}\n")
	run, _, err := pipeline.Submit(context.Background(), c, p, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "pipeline x uses optional steps, step outputs (${steps.<id>.out.<key>}): only a main control with the runs feature can run it")
	assert.Empty(t, run.Steps, "nothing submitted")
	ids, err := c.ListAll(context.Background(), "pending")
	require.NoError(t, err)
	assert.Empty(t, ids)
}

package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// A run cancelled while compensating had part of its work undone: a
// resume must be refused, not run steps under an ended state.
func TestRuns_ResumeRefusedOnceCompensated(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	e := h.executor("e1", "t", 1)
	h.runSubmit(cl, "name", "comp", "steps", "2", "wait", "true",
		"step.0.id", "a", "step.0.type", "t", "step.0.compensate.arg.x", "1",
		"step.1.id", "b", "step.1.type", "t", "step.1.depends_on", "a", "step.1.max_attempts", "1")
	h.runTask(e, "succeeded")
	h.runTask(e, "failed")
	require.Equal(t, "compensating", h.runState(cl, 1).Value("state"))
	assert.Equal(t, "1", h.expect(e, "task").Value("rollback_of"))
	h.send(cl, "run_cancel", "req", "c", "run_id", "1")
	h.expect(cl, "run_cancelled")
	h.expect(e, "cancel")
	assert.Equal(t, "cancelled", h.expect(cl, "run_done").Value("state"))
	h.send(cl, "run_resume", "req", "x", "run_id", "1")
	m := h.expectErr(cl, wire.CodeIllegalTransition)
	assert.Contains(t, m.Value("message"), "(partly) rolled back")
	assert.Equal(t, "cancelled", h.runState(cl, 1).Value("state"))
	assert.Equal(t, Failed, h.state(2))
	h.none(e)
	h.none(cl)
	h.checkReplay()
	h.restart()
	cl = h.client()
	h.send(cl, "run_resume", "req", "x", "run_id", "1")
	assert.Contains(t, h.expectErr(cl, wire.CodeIllegalTransition).Value("message"), "(partly) rolled back")
	assert.Equal(t, "cancelled", h.runState(cl, 1).Value("state"))
	h.checkReplay()
}

// A plain requeue of a step of a rolled-back run would run the step while
// the run shows rolled_back: it is refused as the run's resume is.
func TestRuns_StepRequeueRefusedOnceCompensated(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	e := h.executor("e1", "t", 1)
	h.runSubmit(cl, "name", "comp", "steps", "2", "wait", "true",
		"step.0.id", "a", "step.0.type", "t", "step.0.compensate.arg.x", "1",
		"step.1.id", "b", "step.1.type", "t", "step.1.depends_on", "a", "step.1.max_attempts", "1")
	h.runTask(e, "succeeded")
	h.runTask(e, "failed")
	h.runTask(e, "succeeded") // the compensation of a
	assert.Equal(t, "rolled_back", h.expect(cl, "run_done").Value("state"))
	h.send(cl, "requeue", "req", "r", "task_id", "2")
	assert.Contains(t, h.expectErr(cl, wire.CodeIllegalTransition).Value("message"), "(partly) rolled back")
	assert.Equal(t, Failed, h.state(2))
	assert.Equal(t, "rolled_back", h.runState(cl, 1).Value("state"))
	h.none(e)
	h.checkReplay()
}

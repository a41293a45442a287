package core

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// dumpRuns renders the runs for dump: replay and snapshots must rebuild
// them exactly.
func dumpRuns(b *strings.Builder, c *Core) {
	fmt.Fprintf(b, "runs next=%d notend=%d notendb=%d bytes=%d order=%v\n", c.runs.nextID, c.runs.notEnd,
		c.runs.notEndB, c.runs.bytes, c.runs.order)
	for _, id := range c.runs.order {
		r := c.runs.byID[id]
		fmt.Fprintf(b, "run %d %q key=%q trace=%q first=%d %s comp=%v resumes=%d created=%d updated=%d live=%d bytes=%d\n",
			r.id, r.name, r.key, r.trace, r.first, r.state, r.compensating, r.resumes, r.createdMs, r.updatedMs, r.live, r.bytes)
		for i := range r.steps {
			s := &r.steps[i]
			fmt.Fprintf(b, "  step %s %s deps=%v st=%s skipped=%v opt=%v when=%v refs=%v comp=%v/%s/%v task=%d/%s/%q args=%v\n",
				s.id, s.typ, s.deps, s.st, s.skipped, s.optional, s.whenFail, s.refs, s.comp, s.compType, s.compArgs,
				s.compTask, s.compSt, s.compErr, s.args)
		}
	}
	var of []string
	for id, ref := range c.runs.of {
		of = append(of, fmt.Sprintf("%d=%d/%d/%v", id, ref.run, ref.step, ref.comp))
	}
	slicesSort(of)
	fmt.Fprintf(b, "runs.of %v keys %v\n", of, len(c.runs.byKey))
}

func slicesSort(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// runSubmit sends run_submit with these keys and returns run_submitted.
func (h *harness) runSubmit(p PeerID, kv ...string) *wire.Message {
	h.t.Helper()
	h.send(p, "run_submit", append([]string{"req", "r"}, kv...)...)
	return h.expect(p, "run_submitted")
}

// runState queries a run.
func (h *harness) runState(p PeerID, id uint64) *wire.Message {
	h.t.Helper()
	h.send(p, "run_query", "req", "rq", "run_id", itoa(id))
	return h.expect(p, "run_state")
}

// chain is a run of steps a, b, c, each depending on the one before.
var chain = []string{"name", "nightly", "steps", "3",
	"step.0.id", "a", "step.0.type", "t",
	"step.1.id", "b", "step.1.type", "t", "step.1.depends_on", "a",
	"step.2.id", "c", "step.2.type", "t", "step.2.depends_on", "b"}

// finish runs the next task of executor e to status, with outputs.
func (h *harness) runTask(e PeerID, status string, kv ...string) (uint64, *wire.Message) {
	h.t.Helper()
	m := h.expect(e, "task")
	id, ver := tokenOf(h.t, m)
	h.start(e, id, ver)
	h.accepted(e, id, ver, status, kv...)
	return id, m
}

func TestRuns_SubmitRunsStepsInOrderAndEnds(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	e := h.executor("e1", "t", 1)
	m := h.runSubmit(cl, append(chain, "key", "k1", "wait", "true")...)
	assert.Equal(t, "1", m.Value("run_id"))
	assert.Equal(t, "1,2,3", m.Value("task_ids"))
	assert.Equal(t, "running", h.runState(cl, 1).Value("state"))
	for want := uint64(1); want <= 3; want++ {
		id, _ := h.runTask(e, "succeeded")
		assert.Equal(t, want, id)
	}
	done := h.expect(cl, "run_done")
	assert.Equal(t, "r", done.Value("req"))
	assert.Equal(t, "succeeded", done.Value("state"))
	st := h.runState(cl, 1)
	assert.Equal(t, "succeeded", st.Value("state"))
	assert.Equal(t, "b", st.Value("step.1.id"))
	assert.Equal(t, "2", st.Value("step.1.task_id"))
	assert.Equal(t, "succeeded", st.Value("step.2.state"))
	q := h.query(cl, 2)
	assert.Equal(t, "1", q.Value("run_id"))
	assert.Equal(t, "b", q.Value("step"))

	dup := h.runSubmit(cl, append(chain, "key", "k1", "wait", "true")...)
	assert.Equal(t, "true", dup.Value("duplicate"))
	assert.Equal(t, "1", dup.Value("run_id"))
	assert.Equal(t, "succeeded", h.expect(cl, "run_done").Value("state"))
	h.send(cl, "run_query", "req", "k", "key", "k1")
	assert.Equal(t, "1", h.expect(cl, "run_state").Value("run_id"))
	h.send(cl, "run_list", "req", "l", "state", "succeeded,failed")
	assert.Equal(t, "1", h.expect(cl, "runs").Value("ids"))
	h.checkReplay()
	entries := snapshotEntries(t, h.c)
	assert.Equal(t, dump(h.c), dump(h.loaded(entries, nil)))
}

func TestRuns_BadSubmits(t *testing.T) {
	base := func(kv ...string) []string { return append([]string{"name", "n", "steps", "2"}, kv...) }
	ok2 := []string{"step.0.id", "a", "step.0.type", "t", "step.1.id", "b", "step.1.type", "t"}
	for _, tc := range []struct {
		name string
		kv   []string
		want string
	}{
		{"no name", []string{"steps", "1", "step.0.id", "a", "step.0.type", "t"}, "name"},
		{"no steps", []string{"name", "n"}, "steps"},
		{"zero steps", []string{"name", "n", "steps", "0"}, "steps"},
		{"too many steps", []string{"name", "n", "steps", "101"}, "steps"},
		{"index past steps", base(append(ok2, "step.2.id", "c")...), "step.2.id"},
		{"leading zero index", base(append(ok2, "step.01.label", "x")...), "step.01.label"},
		{"missing id", base("step.0.type", "t", "step.1.id", "b", "step.1.type", "t"), "step.0.id"},
		{"bad id", base("step.0.id", "a.b", "step.0.type", "t", "step.1.id", "b", "step.1.type", "t"), "step.0.id"},
		{"same id", base("step.0.id", "a", "step.0.type", "t", "step.1.id", "a", "step.1.type", "t"), "used twice"},
		{"missing type", base("step.0.id", "a", "step.1.id", "b", "step.1.type", "t"), "step.0.task_type"},
		{"later dependency", base(append(ok2, "step.0.depends_on", "b")...), "step.0.depends_on"},
		{"unknown dependency", base(append(ok2, "step.1.depends_on", "x")...), "step.1.depends_on"},
		{"bad priority", base(append(ok2, "step.1.priority", "10")...), "step.1.priority"},
		{"when without deps", base(append(ok2, "step.1.when", "failed")...), "needs depends_on"},
		{"when other", base(append(ok2, "step.1.depends_on", "a", "step.1.when", "done")...), "step.1.when"},
		{"ref to non-ancestor", base(append(ok2, "step.1.arg.x", "${steps.a.out.p}")...), "names no step"},
		{"ref to self", base(append(ok2, "step.1.depends_on", "a", "step.1.arg.x", "${steps.b.out.p}")...), "names no step"},
		{"bad ref", base(append(ok2, "step.1.depends_on", "a", "step.1.arg.x", "${steps.a.p}")...), "bad output reference"},
		{"unclosed ref", base(append(ok2, "step.1.depends_on", "a", "step.1.arg.x", "${steps.a.out.p")...), "closing"},
		{"comp ref to a later step", base(append(ok2, "step.0.compensate.arg.x", "${steps.b.out.p}")...), "names no step"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			cl := h.client()
			h.send(cl, "run_submit", append([]string{"req", "r"}, tc.kv...)...)
			m := h.expectErr(cl, wire.CodeBadRequest)
			assert.Contains(t, m.Value("message"), tc.want)
			assert.Empty(t, h.c.runs.byID)
			assert.Equal(t, uint64(1), h.c.nextID, "no task made")
		})
	}
}

func TestRuns_OutputReferencesFilledInAtRelease(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	e := h.executor("e1", "t", 1)
	h.runSubmit(cl, "name", "refs", "steps", "3",
		"step.0.id", "fetch", "step.0.type", "t", "step.0.arg.lit", "$${HOME} ${HOME}",
		"step.1.id", "use", "step.1.type", "t", "step.1.depends_on", "fetch",
		"step.1.arg.path", "in=${steps.fetch.out.path}=x", "step.1.arg.esc", "$${steps.fetch.out.path}",
		"step.2.id", "miss", "step.2.type", "t", "step.2.depends_on", "use", "step.2.arg.p", "${steps.fetch.out.nope}")
	_, m := h.runTask(e, "succeeded", "out.path", "/data/a=b\nc")
	assert.Equal(t, "${HOME} ${HOME}", m.Value("arg.lit"))
	h.send(cl, "run_query", "req", "s", "run_id", "1", "step", "use")
	st := h.expect(cl, "run_step")
	assert.Equal(t, "in=/data/a=b\nc=x", st.Value("arg.path"))
	_, m = h.runTask(e, "succeeded")
	assert.Equal(t, "in=/data/a=b\nc=x", m.Value("arg.path"))
	assert.Equal(t, "${steps.fetch.out.path}", m.Value("arg.esc"))
	// The third step's reference finds no output: it fails, not retried.
	assert.Equal(t, Failed, h.state(3))
	assert.Equal(t, "missing output: step fetch has no out.nope", h.get(3).errText())
	rs := h.runState(cl, 1)
	assert.Equal(t, "failed", rs.Value("state"))
	assert.Equal(t, "missing output: step fetch has no out.nope", rs.Value("step.2.error"))
	h.none(e)
	h.checkReplay()
	args := h.get(2).args
	h.restart()
	assert.Equal(t, args, h.get(2).args, "the filled-in args are durable")
}

func TestRuns_ResumeKeepsSucceededSteps(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	e := h.executor("e1", "t", 1)
	h.runSubmit(cl, "name", "four", "key", "nightly", "steps", "4",
		"step.0.id", "s1", "step.0.type", "t",
		"step.1.id", "s2", "step.1.type", "t", "step.1.depends_on", "s1",
		"step.2.id", "s3", "step.2.type", "t", "step.2.depends_on", "s2", "step.2.max_attempts", "1",
		"step.2.arg.in", "${steps.s2.out.v}",
		"step.3.id", "s4", "step.3.type", "t", "step.3.depends_on", "s3")
	h.runTask(e, "succeeded")
	h.runTask(e, "succeeded", "out.v", "2")
	h.runTask(e, "failed", "error", "broken")
	rs := h.runState(cl, 1)
	require.Equal(t, "failed", rs.Value("state"))
	assert.Equal(t, "cancelled", rs.Value("step.3.state"))

	h.send(cl, "run_resume", "req", "x", "run_id", "1")
	m := h.expect(cl, "run_resumed")
	assert.Equal(t, "running", m.Value("state"))
	assert.Equal(t, "s3,s4", m.Value("requeued"))
	id, tm := h.runTask(e, "succeeded")
	assert.Equal(t, uint64(3), id, "step 3 keeps its task id")
	assert.Equal(t, "2", tm.Value("arg.in"))
	id, _ = h.runTask(e, "succeeded")
	assert.Equal(t, uint64(4), id)
	h.none(e)
	rs = h.runState(cl, 1)
	assert.Equal(t, "succeeded", rs.Value("state"))
	assert.Equal(t, "1", rs.Value("resumes"))
	assert.Equal(t, uint64(0), h.get(1).requeues(), "step 1 did not run again")
	h.checkReplay()

	// A succeeded run is not resumed; with from= a step and its
	// dependents run again, and the main control says so.
	h.send(cl, "run_resume", "req", "x", "run_id", "1")
	h.expectErr(cl, wire.CodeIllegalTransition)
}

func TestRuns_ResumeFromReRunsDependents(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	e := h.executor("e1", "t", 1)
	h.runSubmit(cl, append(chain, "step.2.max_attempts", "1")...)
	h.runTask(e, "succeeded")
	h.runTask(e, "succeeded")
	h.runTask(e, "failed")
	h.send(cl, "run_resume", "req", "x", "run_id", "1", "from", "b")
	m := h.expect(cl, "run_resumed")
	assert.Equal(t, "b,c", m.Value("requeued"))
	id, _ := h.runTask(e, "succeeded")
	assert.Equal(t, uint64(2), id)
	h.runTask(e, "succeeded")
	assert.Equal(t, "succeeded", h.runState(cl, 1).Value("state"))
	h.send(cl, "run_resume", "req", "x", "run_id", "1", "from", "zz")
	h.expectErr(cl, wire.CodeBadRequest)
	h.checkReplay()
}

func TestRuns_CompensationRunsInReverseOrder(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	e := h.executor("e1", "t,undo", 1)
	h.runSubmit(cl, "name", "comp", "steps", "3", "wait", "true",
		"step.0.id", "a", "step.0.type", "t", "step.0.compensate.type", "undo", "step.0.compensate.arg.p", "${steps.a.out.p}",
		"step.1.id", "b", "step.1.type", "t", "step.1.depends_on", "a", "step.1.compensate.arg.q", "x",
		"step.2.id", "c", "step.2.type", "t", "step.2.depends_on", "b", "step.2.max_attempts", "1",
		"step.2.compensate.type", "undo")
	h.runTask(e, "succeeded", "out.p", "pa")
	h.runTask(e, "succeeded")
	h.runTask(e, "failed")
	rs := h.runState(cl, 1)
	require.Equal(t, "compensating", rs.Value("state"))
	// b's compensation first (its own type), then a's; c failed: none.
	id, m := h.runTask(e, "failed", "error", "cannot undo", "retryable", "false")
	assert.Equal(t, uint64(4), id)
	assert.Equal(t, "t", m.Value("task_type"))
	assert.Equal(t, "2", m.Value("rollback_of"))
	assert.Equal(t, "x", m.Value("arg.q"))
	h.none(cl)
	id, m = h.runTask(e, "succeeded")
	assert.Equal(t, uint64(5), id)
	assert.Equal(t, "undo", m.Value("task_type"))
	assert.Equal(t, "1", m.Value("rollback_of"))
	assert.Equal(t, "pa", m.Value("arg.p"))
	assert.Equal(t, "rollback_failed", h.expect(cl, "run_done").Value("state"))
	rs = h.runState(cl, 1)
	assert.Equal(t, "rollback_failed", rs.Value("state"))
	assert.Equal(t, "4", rs.Value("step.1.comp_task_id"))
	assert.Equal(t, "failed", rs.Value("step.1.comp_state"))
	assert.Equal(t, "succeeded", rs.Value("step.0.comp_state"))
	assert.False(t, rs.Has("step.2.comp_task_id"))
	q := h.query(cl, 5)
	assert.Equal(t, "1", q.Value("rollback_of"))
	h.send(cl, "run_resume", "req", "x", "run_id", "1")
	assert.Contains(t, h.expectErr(cl, wire.CodeIllegalTransition).Value("message"), "rolled back")
	h.checkReplay()
}

func TestRuns_CompensationAfterARestart(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	e := h.executor("e1", "t", 1)
	h.runSubmit(cl, "name", "comp", "steps", "2",
		"step.0.id", "a", "step.0.type", "t", "step.0.compensate.arg.x", "1",
		"step.1.id", "b", "step.1.type", "t", "step.1.depends_on", "a", "step.1.max_attempts", "1")
	h.runTask(e, "succeeded")
	h.runTask(e, "failed")
	// A crash right after the failure's record: the compensation's was lost.
	for len(h.fx.records) > 0 {
		var r record
		require.NoError(t, decodeRecord(h.fx.records[len(h.fx.records)-1], &r))
		if r.kind != recRunComp && r.kind != recDispatch {
			break
		}
		h.fx.records = h.fx.records[:len(h.fx.records)-1]
	}
	h.restart()
	rs := h.c.runs.byID[1]
	assert.Equal(t, runCompensating, rs.state)
	assert.Equal(t, uint64(3), rs.steps[0].compTask)
	h.checkReplay()
}

func TestRuns_CancelCancelsItsTasks(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	h.runSubmit(cl, append(chain, "wait", "true")...)
	h.send(cl, "run_cancel", "req", "c", "run_id", "1")
	m := h.expect(cl, "run_cancelled")
	assert.Equal(t, "3", m.Value("cancelled"))
	assert.Equal(t, "cancelled", h.expect(cl, "run_done").Value("state"))
	assert.Equal(t, Cancelled, h.state(3))
	h.send(cl, "run_cancel", "req", "c", "run_id", "1")
	h.expectErr(cl, wire.CodeIllegalTransition)
	h.send(cl, "run_cancel", "req", "c", "run_id", "9")
	h.expectErr(cl, wire.CodeUnknownRun)
	// A cancelled run resumes: all its steps run again.
	h.send(cl, "run_resume", "req", "x", "run_id", "1")
	assert.Equal(t, "a,b,c", h.expect(cl, "run_resumed").Value("requeued"))
	h.checkReplay()
}

func TestRuns_ForgottenWithTheirTasks(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RetentionMax = 1 })
	cl := h.client()
	e := h.executor("e1", "t", 1)
	h.runSubmit(cl, "name", "one", "key", "k", "steps", "1", "step.0.id", "a", "step.0.type", "t")
	h.runTask(e, "succeeded")
	h.submit(cl, "task_type", "x")
	h.send(cl, "cancel", "req", "c", "task_id", "2")
	h.expect(cl, "cancelled")
	h.advance(0)
	require.Nil(t, h.c.tasks.get(1))
	h.advance(0)
	h.send(cl, "run_query", "req", "q", "run_id", "1")
	h.expectErr(cl, wire.CodeUnknownRun)
	m := h.runSubmit(cl, "name", "one", "key", "k", "steps", "1", "step.0.id", "a", "step.0.type", "t")
	assert.Equal(t, "2", m.Value("run_id"), "the key is free again; ids are not reused")
	h.checkReplay()
	entries := snapshotEntries(t, h.c)
	assert.Equal(t, dump(h.c), dump(h.loaded(entries, nil)))
}

func TestRuns_Bounds(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRuns = 1 })
	cl := h.client()
	h.runSubmit(cl, chain...)
	h.send(cl, "run_submit", append([]string{"req", "r"}, chain...)...)
	h.expectErr(cl, wire.CodeQueueFull)
	h = newHarness(t, func(c *Config) { c.MaxPending = 2 })
	cl = h.client()
	h.send(cl, "run_submit", append([]string{"req", "r"}, chain...)...)
	h.expectErr(cl, wire.CodeQueueFull)
	assert.Equal(t, uint64(1), h.c.nextID)
	h = newHarness(t, func(c *Config) { c.MaxPendingPerConn = 2 })
	cl = h.client()
	h.send(cl, "run_submit", append([]string{"req", "r"}, chain...)...)
	assert.Contains(t, h.expectErr(cl, wire.CodeQueueFull).Value("message"), "this connection")
	h = newHarness(t, func(c *Config) { c.MaxFrame = 1024 })
	cl = h.client()
	kv := []string{"name", "n", "steps", "8"}
	for i := range 8 {
		kv = append(kv, "step."+strconv.Itoa(i)+".id", "s"+strconv.Itoa(i), "step."+strconv.Itoa(i)+".type", "t")
	}
	h.send(cl, "run_submit", append([]string{"req", "r"}, kv...)...)
	assert.Contains(t, h.expectErr(cl, wire.CodeBadRequest).Value("message"), "run_state")
}

func TestRuns_PlainRequeueFillsReferencesAgain(t *testing.T) {
	for _, out := range []string{"7", ""} {
		h := newHarness(t)
		cl := h.client()
		e := h.executor("e1", "t", 1)
		h.runSubmit(cl, "name", "rq", "steps", "2",
			"step.0.id", "a", "step.0.type", "t", "step.0.max_attempts", "1",
			"step.1.id", "b", "step.1.type", "t", "step.1.depends_on", "a", "step.1.arg.in", "${steps.a.out.v}")
		h.runTask(e, "failed")
		require.Equal(t, Cancelled, h.state(2), "b never left waiting: its args are the template")
		h.send(cl, "requeue", "req", "q", "task_id", "1")
		h.expect(cl, "requeued")
		if out == "" {
			h.runTask(e, "succeeded")
		} else {
			h.runTask(e, "succeeded", "out.v", out)
		}
		// b was cancelled, not waiting: a plain requeue sends it to pending,
		// its references filled in again; without the output, it is refused.
		h.send(cl, "requeue", "req", "q", "task_id", "2")
		if out == "" {
			assert.Contains(t, h.expectErr(cl, wire.CodeIllegalTransition).Value("message"), "missing output: step a has no out.v")
			continue
		}
		h.expect(cl, "requeued")
		_, m := h.runTask(e, "succeeded")
		assert.Equal(t, out, m.Value("arg.in"))
		assert.Equal(t, "succeeded", h.runState(cl, 1).Value("state"))
		h.checkReplay()
	}
}

func TestRuns_OptionalAndOnFailureSteps(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	e := h.executor("e1", "t", 1)
	// lint is optional and fails; notify runs only when build fails, so
	// it is skipped; the run succeeds.
	h.runSubmit(cl, "name", "ci", "steps", "4",
		"step.0.id", "lint", "step.0.type", "t", "step.0.optional", "true", "step.0.max_attempts", "1",
		"step.1.id", "build", "step.1.type", "t", "step.1.depends_on", "lint",
		"step.2.id", "notify", "step.2.type", "t", "step.2.depends_on", "build", "step.2.when", "failed",
		"step.3.id", "after", "step.3.type", "t", "step.3.depends_on", "notify")
	h.runTask(e, "failed")
	id, _ := h.runTask(e, "succeeded")
	assert.Equal(t, uint64(2), id, "build runs though lint failed")
	h.none(e)
	rs := h.runState(cl, 1)
	assert.Equal(t, "succeeded", rs.Value("state"), "%s", rs)
	assert.Equal(t, "true", rs.Value("step.0.optional"))
	assert.Equal(t, "failed", rs.Value("step.0.state"))
	assert.Equal(t, "skipped", rs.Value("step.2.error"))
	assert.Equal(t, "failed", rs.Value("step.2.when"))
	assert.Equal(t, "cancelled", rs.Value("step.3.state"), "below a skipped step: skipped too")
	h.checkReplay()

	// When build fails, notify runs, and the run fails.
	h.runSubmit(cl, "name", "ci", "steps", "2",
		"step.0.id", "build", "step.0.type", "t", "step.0.max_attempts", "1",
		"step.1.id", "notify", "step.1.type", "t", "step.1.depends_on", "build", "step.1.when", "failed",
		"step.1.arg.err", "x")
	h.runTask(e, "failed")
	_, m := h.runTask(e, "succeeded")
	assert.Equal(t, "x", m.Value("arg.err"))
	assert.Equal(t, "failed", h.runState(cl, 2).Value("state"))
	h.checkReplay()
}

func TestRuns_RecordsRoundTrip(t *testing.T) {
	step := runStep{id: "s", typ: "t", args: []kv{{"arg.x", "${steps.a.out.p}"}}, deps: []uint16{0}, priority: 3,
		maxAtt: 2, timeout: 9, label: "l", optional: true, whenFail: true, comp: true, compType: "u",
		compArgs: []kv{{"arg.y", "1"}}, refs: true, st: Failed, compTask: 7, compSt: Succeeded, compErr: "e"}
	var f fieldVals
	f[fieldLabel] = "l"
	for _, r := range []record{
		{kind: recRun, at: 5, run: &runRec{id: 2, name: "n", key: "k", trace: "tr", first: 10,
			steps: []runRecStep{{s: runStep{id: "a", typ: "t"}, state: Pending, args: "arg.x=1", argKeys: 1, fields: f},
				{s: step, state: Waiting, due: 8}}}},
		{kind: recRunComp, at: 5, run: &runRec{id: 2, step: 1, task: 12, typ: "u"}, args: "arg.y=1", argKeys: 1},
		{kind: recRunComp, at: 5, run: &runRec{id: 2, step: 1, compErr: "missing output: step a has no out.p"}},
		{kind: recRunResume, at: 5, why: "r", run: &runRec{id: 2, requeues: []runRequeue{
			{id: 10, version: 3, state: Pending, hasArgs: true, args: "arg.x=2", argKeys: 1}, {id: 11, version: 4, state: Waiting}}}},
		{kind: recRunCancel, at: 5, run: &runRec{id: 2}},
		{kind: recRunDrop, at: 5, ids: []uint64{2, 3}, run: &runRec{}},
		{kind: snapRunMeta, nextID: 4, run: &runRec{}},
		{kind: snapRun, run: &runRec{snap: &run{id: 2, name: "n", key: "k", createdMs: 1, updatedMs: 2, first: 10,
			state: runCompensating, compensating: true, resumes: 1, steps: []runStep{step}}}},
		{kind: recReady, id: 3, at: 4, filled: true, args: "arg.x=1", argKeys: 1},
		{kind: recRequeue, id: 3, at: 4, version: 5, state: Pending, why: "w", filled: true, args: "arg.x=1", argKeys: 1},
	} {
		t.Run(r.kind.String(), func(t *testing.T) {
			b := appendRecord(nil, &r)
			var got record
			require.NoError(t, decodeRecord(b, &got))
			assert.Equal(t, b, appendRecord(nil, &got), "encodes back to the same bytes")
			noFlag := -1 // a ready or requeue record without its flag, as before runs
			if r.filled {
				unf := r
				unf.filled = false
				noFlag = len(appendRecord(nil, &unf)) - 1
			}
			for n := 1; n < len(b); n++ {
				if n == noFlag {
					continue
				}
				assert.ErrorIs(t, decodeRecord(b[:n], &got), ErrCorrupt, "prefix of %d bytes", n)
			}
			_, err := DescribeRecord(b)
			require.NoError(t, err)
		})
	}
}

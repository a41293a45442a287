package pipeline_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/executor/builtin"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
	"github.com/apollo11/apollo11/pipeline"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// system runs a real in-memory main control and one executor with the
// built-in handlers, until the test ends.
func system(t *testing.T, slots int) *client.Client {
	t.Helper()
	addr, _ := maincontroltest.Start(t, maincontrol.Config{Logger: quiet()})
	runExecutor(t, addr, "pipe-ex", slots, map[string]executor.Handler{
		"echo": builtin.Echo(), "fail": builtin.Fail(), "sleep": builtin.Sleep()})
	return dialClient(t, addr)
}

// runExecutor runs an executor with these handlers until the test ends.
func runExecutor(t *testing.T, addr, id string, slots int, handlers map[string]executor.Handler) {
	t.Helper()
	ex, err := executor.New(executor.Config{Addr: addr, ID: id, Slots: slots, Logger: quiet(), Handlers: handlers})
	require.NoError(t, err)
	exCtx, exCancel := context.WithCancel(context.Background())
	exDone := make(chan error, 1)
	go func() { exDone <- ex.Run(exCtx) }()
	t.Cleanup(func() {
		exCancel()
		<-exDone
	})
}

// dialClient connects a client until the test ends.
func dialClient(t *testing.T, addr string) *client.Client {
	t.Helper()
	cl, err := client.Dial(context.Background(), addr, client.Options{Logger: quiet()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

func mustPlan(t *testing.T, yaml string) *pipeline.Plan {
	t.Helper()
	p, err := pipeline.Parse(strings.NewReader(yaml), nil)
	require.NoError(t, err)
	return p
}

func runWait(t *testing.T, cl *client.Client, p *pipeline.Plan) map[string]client.Done {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got := map[string]client.Done{}
	_, err := pipeline.SubmitAndWait(ctx, cl, p, func(s pipeline.RunStep, d client.Done) { got[s.ID] = d })
	require.NoError(t, err)
	return got
}

func TestPipeline_ChainAndDiamondSucceed(t *testing.T) {
	cl := system(t, 4)
	got := runWait(t, cl, mustPlan(t, `
name: diamond
steps:
  - {id: top, type: echo, args: {v: top}}
  - {id: left, type: echo, depends_on: [top], args: {v: left}}
  - {id: right, type: echo, depends_on: [top]}
  - {id: join, type: echo, depends_on: [left, right], args: {v: join}}
`))
	for _, id := range []string{"top", "left", "right", "join"} {
		assert.Equal(t, "succeeded", got[id].State, id)
	}
	assert.Equal(t, "join", got["join"].Out["v"])
}

// Every step of a run shares the run's trace id, and the next run gets
// another: the dashboard groups a run's tasks by it.
func TestPipeline_StepsShareTheRunsTraceID(t *testing.T) {
	cl := system(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	plan := mustPlan(t, `
name: traced
steps:
  - {id: a, type: echo}
  - {id: b, type: echo, depends_on: [a]}
`)
	var traces []string
	for range 2 {
		run, err := pipeline.SubmitAndWait(ctx, cl, plan, func(pipeline.RunStep, client.Done) {})
		require.NoError(t, err)
		require.Len(t, run.TraceID, 32)
		for _, st := range run.Steps {
			ts, err := cl.Query(ctx, st.TaskID)
			require.NoError(t, err)
			assert.Equal(t, run.TraceID, ts.TraceID, st.ID)
		}
		traces = append(traces, run.TraceID)
	}
	assert.NotEqual(t, traces[0], traces[1])
}

func TestPipeline_FailurePropagatesThroughChainAndDiamond(t *testing.T) {
	cl := system(t, 4)
	got := runWait(t, cl, mustPlan(t, `
name: broken
steps:
  - {id: top, type: fail, args: {retryable: "false"}}
  - {id: left, type: echo, depends_on: [top]}
  - {id: right, type: echo}
  - {id: join, type: echo, depends_on: [left, right]}
  - {id: tail, type: echo, depends_on: [join]}
`))
	assert.Equal(t, "failed", got["top"].State)
	assert.Equal(t, "succeeded", got["right"].State)
	for _, id := range []string{"left", "join", "tail"} {
		assert.Equal(t, "cancelled", got[id].State, id)
	}
	topID := doneID(got["top"])
	assert.Equal(t, fmt.Sprintf("dependency %d failed", topID), got["left"].Error)
	assert.Equal(t, fmt.Sprintf("dependency %d cancelled", doneID(got["left"])), got["join"].Error)
	assert.Equal(t, fmt.Sprintf("dependency %d cancelled", doneID(got["join"])), got["tail"].Error)
}

func doneID(d client.Done) uint64 { return d.ID }

func TestPipeline_CancelPropagates(t *testing.T) {
	cl := system(t, 1)
	ctx := context.Background()
	run, err := pipeline.SubmitAndWait(ctx, cl, mustPlan(t, `
name: long
steps:
  - {id: slow, type: sleep, args: {ms: "60000"}}
  - {id: next, type: echo, depends_on: [slow]}
  - {id: last, type: echo, depends_on: [next]}
`), nil)
	require.NoError(t, err)
	require.NoError(t, cl.Cancel(ctx, run.Steps[0].TaskID))
	require.Eventually(t, func() bool {
		sts, err := pipeline.Status(ctx, cl, run)
		return err == nil && sts[1].State == "cancelled" && sts[2].State == "cancelled"
	}, 5*time.Second, 10*time.Millisecond)
	sts, err := pipeline.Status(ctx, cl, run)
	require.NoError(t, err)
	assert.Equal(t, "cancelled", sts[0].State)
	assert.Equal(t, fmt.Sprintf("dependency %d cancelled", run.Steps[1].TaskID), sts[2].Error)
}

func TestPipeline_UnknownDependencyRefused(t *testing.T) {
	cl := system(t, 1)
	_, err := cl.Submit(context.Background(), client.SubmitRequest{Type: "echo", DependsOn: []uint64{424242}})
	require.Error(t, err)
	assert.True(t, client.IsCode(err, "bad_request"), "%v", err)
	assert.Contains(t, err.Error(), "unknown task 424242")
}

func TestPipeline_ThousandSteps(t *testing.T) {
	cl := system(t, 8)
	var b strings.Builder
	b.WriteString("name: big\nsteps:\n")
	for i := 0; i < 1000; i++ {
		// Each step depends on the one before and on one ten back: a long
		// chain with fan-in.
		deps := []string{}
		if i > 0 {
			deps = append(deps, fmt.Sprintf("s%d", i-1))
		}
		if i >= 10 {
			deps = append(deps, fmt.Sprintf("s%d", i-10))
		}
		fmt.Fprintf(&b, "  - {id: s%d, type: echo, args: {i: \"%d\"}, depends_on: [%s]}\n", i, i, strings.Join(deps, ", "))
	}
	p := mustPlan(t, b.String())
	assert.Len(t, p.Longest, 1000)
	got := runWait(t, cl, p)
	require.Len(t, got, 1000)
	for id, d := range got {
		require.Equal(t, "succeeded", d.State, id)
	}
	assert.Equal(t, "999", got["s999"].Out["i"])
}

// Steps that ended before Wait are reported first, in the plan's order:
// a long chain's first steps end while its last are being submitted, and
// reporting them in whatever order goroutines ran read like a shuffle.
func TestPipeline_EndedStepsInPlanOrder(t *testing.T) {
	cl := system(t, 4)
	var b strings.Builder
	b.WriteString("name: chain\nsteps:\n  - {id: s0, type: echo}\n")
	const n = 30
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  - {id: s%d, type: echo, depends_on: [s%d]}\n", i, i-1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, pw, err := pipeline.Submit(ctx, cl, mustPlan(t, b.String()), true)
	require.NoError(t, err)
	defer pw.Close()
	last := run.Steps[n-1].TaskID
	require.Eventually(t, func() bool {
		st, err := cl.Query(ctx, last)
		return err == nil && st.State == "succeeded"
	}, 20*time.Second, 10*time.Millisecond, "the chain ends before anyone waits")
	var order []string
	require.NoError(t, pw.Wait(ctx, func(s pipeline.RunStep, d client.Done) {
		assert.Equal(t, "succeeded", d.State)
		order = append(order, s.ID)
	}))
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("s%d", i)
	}
	assert.Equal(t, want, order)
}

// When a re-run (same key) has a submit refused, steps whose key
// returned the first run's tasks are left to that run, and the task it
// made is kept for the next run with the key.
func TestPipeline_RefusedRerunLeavesTheFirstRun(t *testing.T) {
	cl := system(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const first = `
name: rerun
key: kr
steps:
  - {id: a, type: echo, delay: 1h}
  - {id: b, type: echo, depends_on: [a]}
`
	run1, err := pipeline.SubmitAndWait(ctx, cl, mustPlan(t, first), nil)
	require.NoError(t, err)
	p := mustPlan(t, first+"  - {id: n, type: echo, delay: 1h}\n  - {id: c, type: echo, depends_on: [b]}\n")
	require.Equal(t, "c", p.Steps[3].ID)
	p.Steps[3].Args = map[string]string{} // more args than a task frame carries: the main control refuses it
	for i := range 1016 {
		p.Steps[3].Args[fmt.Sprintf("a%d", i)] = "v"
	}
	run2, _, refusal := pipeline.Submit(ctx, cl, p, false)
	require.Error(t, refusal)
	assert.True(t, client.IsCode(refusal, "bad_request"), "%v", refusal)
	require.Len(t, run2.Steps, 3)
	assert.Equal(t, run1.Steps[0].TaskID, run2.Steps[0].TaskID, "a duplicate of the first run's a")

	sts, err := pipeline.Status(ctx, cl, run1)
	require.NoError(t, err)
	assert.Equal(t, "pending", sts[0].State, "the first run's tasks are left alone")
	assert.Equal(t, "waiting", sts[1].State)
	n, err := cl.Query(ctx, run2.Steps[2].TaskID)
	require.NoError(t, err)
	assert.Equal(t, "pending", n.State, "what the keyed re-run made is kept for the next run")
	assert.Contains(t, refusal.Error(), fmt.Sprintf("the step this run submitted before it is kept: "+
		"once the cause is gone (room in the queue, or a fixed step), run the pipeline again with the same key "+
		"to submit the rest, or cancel task %d to end them", run2.Steps[2].TaskID))
}

// gated is a pipeline whose first step waits for an executor of type
// gate, started only when a test wants the steps to run.
const gated = `
name: gated
steps:
  - {id: a, type: gate}
  - {id: b, type: echo, depends_on: [a]}
  - {id: c, type: echo, depends_on: [b]}
`

// queueOfTwo runs a main control that holds at most 2 unfinished tasks,
// and an echo executor.
func queueOfTwo(t *testing.T) (string, *client.Client) {
	t.Helper()
	cfg := maincontrol.Config{Logger: quiet()}
	cfg.Core.MaxPending = 2
	addr, _ := maincontroltest.Start(t, cfg)
	runExecutor(t, addr, "echo-ex", 4, map[string]executor.Handler{"echo": builtin.Echo()})
	return addr, dialClient(t, addr)
}

// Without a key, the steps made before a refused submit are cancelled:
// no later run could pick them up.
func TestPipeline_RefusedUnkeyedRunIsCancelled(t *testing.T) {
	_, cl := queueOfTwo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, _, err := pipeline.Submit(ctx, cl, mustPlan(t, gated), false)
	require.Error(t, err)
	assert.True(t, client.IsQueueFull(err), "%v", err)
	assert.NotContains(t, err.Error(), "kept")
	require.Len(t, run.Steps, 2)
	assertAllCancelled(t, cl, run)
}

// SubmitEach makes every request, the submits and the cancels
// of a refused run, under a context of its own, and ends each once its
// request is done: a timeout per request, where Submit's one ctx
// had none (`pipeline run` hung on a main control that never replied).
func TestPipeline_EachRequestUnderItsOwnContext(t *testing.T) {
	_, cl := queueOfTwo(t)
	var ctxs []context.Context
	run, _, err := pipeline.SubmitEach(cl, mustPlan(t, gated), false, func() (context.Context, context.CancelFunc) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		ctxs = append(ctxs, ctx)
		return ctx, cancel
	})
	require.Error(t, err)
	assert.True(t, client.IsQueueFull(err), "%v", err)
	require.Len(t, run.Steps, 2)
	assert.Len(t, ctxs, 5, "3 submits (the third refused), then 2 cancels")
	for i, ctx := range ctxs {
		assert.ErrorIs(t, ctx.Err(), context.Canceled, "request %d: its context was not ended", i)
	}
	assertAllCancelled(t, cl, run)
}

// With a key, the steps made before a refused submit are kept, and
// running the plan again with the key once there is room picks them up
// and submits the rest: the retry queue_full asks for works. (Cancelling
// them made every retry fail: each key kept returning its cancelled
// task, and the steps after it were cancelled as they came.)
func TestPipeline_RefusedKeyedRunIsKeptAndARetryFinishesIt(t *testing.T) {
	addr, cl := queueOfTwo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plan := mustPlan(t, gated+"key: retry-me\n")
	run1, _, err := pipeline.Submit(ctx, cl, plan, false)
	require.Error(t, err)
	assert.True(t, client.IsQueueFull(err), "%v", err)
	require.Len(t, run1.Steps, 2)
	assert.Contains(t, err.Error(), "step c: ")
	assert.Contains(t, err.Error(), fmt.Sprintf("the 2 steps this run submitted before it are kept: "+
		"once the cause is gone (room in the queue, or a fixed step), run the pipeline again with the same key "+
		"to submit the rest, or cancel task %d to end them", run1.Steps[0].TaskID))
	sts, err := pipeline.Status(ctx, cl, run1)
	require.NoError(t, err)
	assert.Equal(t, "pending", sts[0].State)
	assert.Equal(t, "waiting", sts[1].State)

	// Make room: let the kept steps run and end.
	runExecutor(t, addr, "gate-ex", 1, map[string]executor.Handler{"gate": builtin.Echo()})
	require.Eventually(t, func() bool {
		st, err := cl.Query(ctx, run1.Steps[1].TaskID)
		return err == nil && st.State == "succeeded"
	}, 10*time.Second, 10*time.Millisecond)

	got := map[string]client.Done{}
	run2, err := pipeline.SubmitAndWait(ctx, cl, plan, func(s pipeline.RunStep, d client.Done) { got[s.ID] = d })
	require.NoError(t, err)
	require.Len(t, run2.Steps, 3)
	assert.Equal(t, run1.Steps[0].TaskID, run2.Steps[0].TaskID, "a, by its key")
	assert.Equal(t, run1.Steps[1].TaskID, run2.Steps[1].TaskID, "b, by its key")
	for _, id := range []string{"a", "b", "c"} {
		assert.Equal(t, "succeeded", got[id].State, id)
	}
}

// A step whose task the main control has forgotten does not hide the
// others: it is shown as unknown.
func TestPipeline_StatusWithForgottenStep(t *testing.T) {
	cl := system(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := cl.Submit(ctx, client.SubmitRequest{Type: "nobody-runs-this"})
	require.NoError(t, err)
	run := &pipeline.Run{Name: "old", Steps: []pipeline.RunStep{
		{ID: "gone", TaskID: 999999}, {ID: "here", TaskID: sub.ID}}}
	states, err := pipeline.Status(ctx, cl, run)
	require.NoError(t, err)
	assert.Equal(t, "unknown", states[0].State)
	assert.Contains(t, states[0].Error, "retention")
	assert.Equal(t, "pending", states[1].State)
}

// A keyed pipeline run again after retention forgot its first step (but
// not the later ones) would be half old, half new: it is refused, and the
// task made anew is cancelled.
func TestPipeline_RerunAfterPartialRetention(t *testing.T) {
	cfg := maincontrol.Config{Logger: quiet()}
	cfg.Core.RetentionMax = 2
	addr, _ := maincontroltest.Start(t, cfg)
	cl, err := client.Dial(context.Background(), addr, client.Options{Logger: quiet()})
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plan := mustPlan(t, `
name: keyed
key: k1
steps:
  - {id: first, type: hold}
  - {id: second, type: hold, depends_on: [first]}
  - {id: third, type: hold, depends_on: [second]}
`)
	run, _, err := pipeline.Submit(ctx, cl, plan, false)
	require.NoError(t, err)
	// End the run (cancelling the first cancels the rest), then let
	// retention (2 newest ended tasks) forget the first step's task.
	require.NoError(t, cl.Cancel(ctx, run.Steps[0].TaskID))
	require.Eventually(t, func() bool {
		_, err := cl.Query(ctx, run.Steps[0].TaskID)
		return client.IsCode(err, "unknown_task")
	}, 10*time.Second, 50*time.Millisecond, "retention forgets the first step")

	again, _, err := pipeline.Submit(ctx, cl, plan, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "forgotten by the main control")
	require.Len(t, again.Steps, 2)
	assert.Equal(t, run.Steps[1].TaskID, again.Steps[1].TaskID, "the earlier run's second step")
	st, err := cl.Query(ctx, again.Steps[0].TaskID)
	require.NoError(t, err)
	assert.Equal(t, "cancelled", st.State, "the first step made anew is taken back")
}

// A run ended by its caller (Ctrl-C ends the parent of every request's
// context) still takes back the steps it made: the cancels are made under
// their own deadline, not the ended parent, which made every one fail.
func TestPipeline_InterruptedUnkeyedRunIsTakenBack(t *testing.T) {
	_, cl := queueOfTwo(t)
	parent, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	calls := 0
	run, _, err := pipeline.SubmitEach(cl, mustPlan(t, gated), false, func() (context.Context, context.CancelFunc) {
		if calls++; calls == 3 {
			interrupt() // Ctrl-C before the third step's submit
		}
		return context.WithTimeout(parent, 30*time.Second)
	})
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.NotContains(t, err.Error(), "cannot cancel")
	require.Len(t, run.Steps, 2)
	assertAllCancelled(t, cl, run)
}

// assertAllCancelled checks that every step of run was cancelled: a run
// taken back.
func assertAllCancelled(t *testing.T, cl *client.Client, run *pipeline.Run) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sts, err := pipeline.Status(ctx, cl, run)
	require.NoError(t, err)
	for i, st := range sts {
		assert.Equal(t, "cancelled", st.State, "step %s", run.Steps[i].ID)
	}
}

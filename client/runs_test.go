package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
)

// fields returns a request's keys but type and req.
func fields(m interface{ Value(string) string }, keys []string) map[string]string {
	got := map[string]string{}
	for _, k := range keys {
		got[k] = m.Value(k)
	}
	return got
}

// run_submit carries every step under step.<i>., in the order given, and
// run_submitted's task ids come back in step order.
func TestClient_RunSubmit(t *testing.T) {
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{})
	want := map[string]string{
		"name": "nightly", "key": "k-1", "trace_id": "t-1", "steps": "3",
		"step.0.id": "fetch", "step.0.type": "exec", "step.0.arg.argv": "/bin/fetch", "step.0.max_attempts": "2",
		"step.0.timeout_ms": "1500", "step.0.compensate.type": "rm", "step.0.compensate.arg.p": "${steps.fetch.out.p}",
		"step.1.id": "use", "step.1.type": "echo", "step.1.depends_on": "fetch", "step.1.optional": "true",
		"step.1.arg.p": "${steps.fetch.out.p}", "step.1.priority": "7", "step.1.delay_ms": "1", "step.1.label": "l",
		"step.2.id": "page", "step.2.type": "echo", "step.2.depends_on": "fetch,use", "step.2.when": "failed",
		"step.2.compensate.type": "echo",
	}
	go func() {
		m := sc.expect("run_submit")
		got := map[string]string{}
		for _, fl := range m.Fields {
			if fl.Key != "type" && fl.Key != "req" {
				got[fl.Key] = fl.Value
			}
		}
		assert.Equal(t, want, got)
		sc.send("run_submitted", "req", m.Value("req"), "run_id", "5", "task_ids", "10,11,12")
	}()
	sub, err := c.RunSubmit(context.Background(), client.RunRequest{Name: "nightly", Key: "k-1", TraceID: "t-1", Steps: []client.RunStepRequest{
		{ID: "fetch", Type: "exec", Args: map[string]string{"argv": "/bin/fetch"}, MaxAttempts: 2, Timeout: 1500 * time.Millisecond,
			Compensate: &client.RunCompensate{Type: "rm", Args: map[string]string{"p": "${steps.fetch.out.p}"}}},
		{ID: "use", Type: "echo", DependsOn: []string{"fetch"}, Optional: true, Args: map[string]string{"p": "${steps.fetch.out.p}"},
			Priority: 7, Delay: time.Microsecond, Label: "l"},
		{ID: "page", Type: "echo", DependsOn: []string{"fetch", "use"}, When: "failed", Compensate: &client.RunCompensate{}},
	}})
	require.NoError(t, err)
	assert.Equal(t, client.RunSubmitted{ID: 5, TaskIDs: []uint64{10, 11, 12}}, sub)

	for _, bad := range []client.RunRequest{
		{}, {Name: "x"}, {Name: "x", Steps: []client.RunStepRequest{{ID: "a"}}},
		{Name: "x", Steps: []client.RunStepRequest{{ID: "a", Type: "t", When: "always"}}},
	} {
		_, err := c.RunSubmit(context.Background(), bad)
		assert.Error(t, err, "refused before sending: %+v", bad)
	}
}

// run_state and run_step are read key by key; a key names a run as well
// as an id does.
func TestClient_RunQuery(t *testing.T) {
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{})
	go func() {
		m := sc.expect("run_query")
		assert.Equal(t, map[string]string{"key": "k", "run_id": ""}, fields(m, []string{"key", "run_id"}))
		sc.send("run_state", "req", m.Value("req"), "run_id", "5", "name", "n", "key", "k", "state", "rolled_back",
			"steps", "2", "created_ms", "1000", "updated_ms", "2000", "resumes", "1", "trace_id", "t",
			"step.0.id", "a", "step.0.task_id", "10", "step.0.state", "succeeded", "step.0.comp_task_id", "12",
			"step.0.comp_state", "succeeded",
			"step.1.id", "b", "step.1.task_id", "11", "step.1.state", "failed", "step.1.error", "boom",
			"step.1.optional", "true", "step.1.when", "failed")
		m = sc.expect("run_query")
		assert.Equal(t, map[string]string{"run_id": "5", "step": "b"}, fields(m, []string{"run_id", "step"}))
		sc.send("run_step", "req", m.Value("req"), "run_id", "5", "step", "b", "task_id", "11", "state", "failed",
			"arg.p", "/tmp/x")
		m = sc.expect("run_query")
		sc.send("error", "req", m.Value("req"), "code", "unknown_run", "message", "no run 9")
	}()
	rs, err := c.RunQuery(context.Background(), client.RunRef{Key: "k"})
	require.NoError(t, err)
	assert.Equal(t, client.RunState{ID: 5, Name: "n", Key: "k", State: client.RunRolledBack, Resumes: 1, TraceID: "t",
		Created: time.UnixMilli(1000), Updated: time.UnixMilli(2000), Steps: []client.RunStepState{
			{ID: "a", TaskID: 10, State: "succeeded", CompTaskID: 12, CompState: "succeeded"},
			{ID: "b", TaskID: 11, State: "failed", Error: "boom", Optional: true, When: "failed"},
		}}, rs)
	assert.True(t, client.RunEnded(rs.State))
	si, err := c.RunQueryStep(context.Background(), client.RunRef{ID: 5}, "b")
	require.NoError(t, err)
	assert.Equal(t, client.RunStepInfo{RunID: 5, Step: "b", TaskID: 11, State: "failed", Args: map[string]string{"p": "/tmp/x"}}, si)
	_, err = c.RunQuery(context.Background(), client.RunRef{ID: 9})
	assert.True(t, client.IsCode(err, "unknown_run"), "%v", err)
}

func TestClient_RunListCancelResume(t *testing.T) {
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{})
	go func() {
		m := sc.expect("run_list")
		assert.Equal(t, map[string]string{"state": "failed,cancelled", "limit": "2", "after": "3"},
			fields(m, []string{"state", "limit", "after"}))
		sc.send("runs", "req", m.Value("req"), "count", "2", "ids", "4,6", "next", "6")
		m = sc.expect("run_cancel")
		assert.Equal(t, "6", m.Value("run_id"))
		sc.send("run_cancelled", "req", m.Value("req"), "run_id", "6", "cancelled", "3")
		m = sc.expect("run_resume")
		assert.Equal(t, map[string]string{"run_id": "4", "from": "b", "reason": "fixed"},
			fields(m, []string{"run_id", "from", "reason"}))
		sc.send("run_resumed", "req", m.Value("req"), "run_id", "4", "state", "running", "requeued", "b,c")
	}()
	ids, next, err := c.RunList(context.Background(), []string{"failed", "cancelled"}, 2, 3)
	require.NoError(t, err)
	assert.Equal(t, []uint64{4, 6}, ids)
	assert.EqualValues(t, 6, next)
	n, err := c.RunCancel(context.Background(), 6)
	require.NoError(t, err)
	assert.EqualValues(t, 3, n)
	r, err := c.RunResume(context.Background(), 4, client.RunResumeOptions{From: "b", Reason: "fixed"})
	require.NoError(t, err)
	assert.Equal(t, client.RunResumed{ID: 4, State: "running", Requeued: []string{"b", "c"}}, r)
}

// RunSubmitWait reports run_submitted as it comes, then returns run_done,
// both carrying the request's req.
func TestClient_RunSubmitWait(t *testing.T) {
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{})
	submitted := make(chan client.RunSubmitted, 1)
	go func() {
		m := sc.expect("run_submit")
		assert.Equal(t, "true", m.Value("wait"))
		sc.send("run_submitted", "req", m.Value("req"), "run_id", "8", "task_ids", "20")
		<-submitted // run_done only after the caller saw run_submitted
		sc.send("run_done", "req", m.Value("req"), "run_id", "8", "state", "failed")
	}()
	sub, done, err := c.RunSubmitWait(context.Background(), client.RunRequest{Name: "n", Steps: []client.RunStepRequest{{ID: "a", Type: "t"}}},
		func(s client.RunSubmitted) { submitted <- s })
	require.NoError(t, err)
	assert.Equal(t, client.RunSubmitted{ID: 8, TaskIDs: []uint64{20}}, sub)
	assert.Equal(t, client.RunDone{ID: 8, State: client.RunFailed}, done)
}

// WaitRun queries until the run is in a final state: compensating is not.
func TestClient_WaitRun(t *testing.T) {
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{})
	go func() {
		for _, st := range []string{"running", "compensating", "rolled_back"} {
			m := sc.expect("run_query")
			sc.send("run_state", "req", m.Value("req"), "run_id", "3", "name", "n", "state", st, "steps", "0",
				"created_ms", "1", "updated_ms", "1", "resumes", "0")
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	rs, err := c.WaitRun(ctx, client.RunRef{ID: 3})
	require.NoError(t, err)
	assert.Equal(t, client.RunRolledBack, rs.State)
}

func TestParseRunRef(t *testing.T) {
	assert.Equal(t, client.RunRef{ID: 12}, client.ParseRunRef("12"))
	assert.Equal(t, client.RunRef{Key: "nightly-1"}, client.ParseRunRef("nightly-1"))
	assert.Equal(t, client.RunRef{Key: "007"}, client.ParseRunRef("007"), "a leading zero is no id")
	assert.Equal(t, client.RunRef{Key: "0"}, client.ParseRunRef("0"))
}

// task_state of a run's task names its run and step, and a
// compensation the step task it undoes.
func TestClient_QueryRunTask(t *testing.T) {
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{})
	go func() {
		m := sc.expect("query")
		sc.send("task_state", "req", m.Value("req"), "task_id", "12", "version", "1", "state", "succeeded",
			"attempt", "1", "max_attempts", "1", "task_type", "echo", "created_ms", "1", "updated_ms", "1",
			"run_id", "5", "step", "book", "rollback_of", "10")
	}()
	ts, err := c.Query(context.Background(), 12)
	require.NoError(t, err)
	assert.EqualValues(t, 5, ts.RunID)
	assert.Equal(t, "book", ts.Step)
	assert.EqualValues(t, 10, ts.RollbackOf)
}

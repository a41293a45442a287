package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/fakemain"
	"github.com/apollo11/apollo11/wire"
)

// runsServer is a scripted main control whose welcome lists runs.
func runsServer(t *testing.T) *fakemain.Server {
	var greeting bytes.Buffer
	require.NoError(t, fakemain.WriteMsg(&greeting, "welcome", "proto", "1", "server", "apollo11/test", "nonce", "n",
		"auth", "none", "max_frame", "1048576", "features", "admin,types,runs"))
	return fakemain.Start(t, fakemain.WithGreeting(greeting.Bytes()))
}

// next reads the client's next frame, of type typ.
func next(t *testing.T, c *fakemain.Conn, typ string) *wire.Message {
	t.Helper()
	require.NoError(t, c.Net.SetReadDeadline(time.Now().Add(fakemain.WaitFor)))
	m, err := c.R.ReadMessage()
	require.NoError(t, err, "waiting for %s", typ)
	require.Equal(t, typ, m.Type(), "%s", m)
	return m
}

// pipeline run --resume on a main control with runs: one run_submit, the
// key names a failed run, which is resumed and followed to its end.
func TestPipelineRun_ResumeAsRun(t *testing.T) {
	srv := runsServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`name: p
key: k-1
steps:
  - {id: a, type: echo, args: {x: "1"}}
  - {id: b, type: echo, depends_on: [a], args: {y: "${steps.a.out.x}"}, optional: true}
`), 0o644))
	served := make(chan struct{})
	go func() {
		defer close(served)
		c := srv.Accept(t)
		m := next(t, c, "hello")
		c.Send("hello_ok", "req", m.Value("req"))
		m = next(t, c, "run_submit")
		assert.Equal(t, "k-1", m.Value("key"))
		assert.Equal(t, "2", m.Value("steps"))
		assert.Equal(t, "${steps.a.out.x}", m.Value("step.1.arg.y"))
		assert.Equal(t, "a", m.Value("step.1.depends_on"))
		assert.Equal(t, "true", m.Value("step.1.optional"))
		assert.Len(t, m.Value("trace_id"), 32)
		assert.False(t, m.Has("wait"), "--resume waits by querying, after the resume")
		c.Send("run_submitted", "req", m.Value("req"), "run_id", "4", "task_ids", "10,11", "duplicate", "true")
		m = next(t, c, "run_query")
		assert.Equal(t, "4", m.Value("run_id"))
		c.Send("run_state", "req", m.Value("req"), "run_id", "4", "name", "p", "key", "k-1", "state", "failed", "steps", "0",
			"created_ms", "1", "updated_ms", "1", "resumes", "0")
		m = next(t, c, "run_resume")
		assert.Equal(t, "4", m.Value("run_id"))
		c.Send("run_resumed", "req", m.Value("req"), "run_id", "4", "state", "running", "requeued", "b")
		m = next(t, c, "run_query")
		c.Send("run_state", "req", m.Value("req"), "run_id", "4", "name", "p", "key", "k-1", "state", "succeeded", "steps", "2",
			"created_ms", "1", "updated_ms", "2", "resumes", "1",
			"step.0.id", "a", "step.0.task_id", "10", "step.0.state", "succeeded",
			"step.1.id", "b", "step.1.task_id", "11", "step.1.state", "succeeded", "step.1.optional", "true")
	}()
	var out, errOut bytes.Buffer
	rc := run([]string{"pipeline", "run", file, "--addr", srv.Addr(), "--resume", "--wait", "--run-file", filepath.Join(dir, "p.run.json")}, &out, &errOut)
	<-served
	require.Equal(t, 0, rc, "%s%s", out.String(), errOut.String())
	// The key found run 4: nothing was submitted, and the first line says so.
	assert.Contains(t, errOut.String(), "pipeline p: key k-1 names run 4, made before\nrun 4 resumed: requeued b; waiting for it to end\n")
	assert.NotContains(t, errOut.String(), "submitted")
	assert.Contains(t, out.String(), "run 4 p (key k-1): succeeded, resumed 1 time\n")
	assert.Regexp(t, `b +task 11 +succeeded  optional\n`, out.String())

	var rec struct {
		RunID uint64 `json:"run_id"`
		Key   string `json:"key"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "p.run.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rec))
	assert.EqualValues(t, 4, rec.RunID, "the run file names the run, for pipeline status")
	assert.Equal(t, "k-1", rec.Key)
}

// pipeline run --wait sends wait=true and ends with run_done: exit 1
// for a run that rolled back, with each compensation shown.
func TestPipelineRun_WaitAsRun(t *testing.T) {
	srv := runsServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	require.NoError(t, os.WriteFile(file, []byte("name: p\nsteps:\n  - {id: a, type: echo, compensate: {type: undo}}\n  - {id: b, type: fail, depends_on: [a]}\n"), 0o644))
	go func() {
		c := srv.Accept(t)
		m := next(t, c, "hello")
		c.Send("hello_ok", "req", m.Value("req"))
		m = next(t, c, "run_submit")
		assert.Equal(t, "true", m.Value("wait"))
		assert.Equal(t, "undo", m.Value("step.0.compensate.type"))
		req := m.Value("req")
		c.Send("run_submitted", "req", req, "run_id", "9", "task_ids", "1,2")
		c.Send("run_done", "req", req, "run_id", "9", "state", "rolled_back")
		m = next(t, c, "run_query")
		c.Send("run_state", "req", m.Value("req"), "run_id", "9", "name", "p", "state", "rolled_back", "steps", "2",
			"created_ms", "1", "updated_ms", "2", "resumes", "0",
			"step.0.id", "a", "step.0.task_id", "1", "step.0.state", "succeeded", "step.0.comp_task_id", "3", "step.0.comp_state", "succeeded",
			"step.1.id", "b", "step.1.task_id", "2", "step.1.state", "failed", "step.1.error", "fail handler")
	}()
	var out, errOut bytes.Buffer
	rc := run([]string{"pipeline", "run", file, "--addr", srv.Addr(), "--wait", "--run-file", filepath.Join(dir, "p.run.json")}, &out, &errOut)
	assert.Equal(t, 1, rc, "%s%s", out.String(), errOut.String())
	assert.Contains(t, errOut.String(), "pipeline p submitted as run 9: 2 steps; waiting for it to end")
	assert.Contains(t, out.String(), "run 9 p: rolled_back\n")
	assert.Regexp(t, `  compensation +task 3 +succeeded\n`, out.String())
	assert.Regexp(t, `b +task 2 +failed  \(fail handler\)\n`, out.String())
	assert.NotContains(t, out.String(), "resume with", "a rolled-back run is not resumed")
}

// pipeline status and resume name a run by id or key; they need runs.
func TestPipelineStatusResume_NeedRuns(t *testing.T) {
	srv := fakemain.Start(t) // a welcome without features
	go func() {
		for range 4 {
			c := srv.Accept(t)
			m := next(t, c, "hello")
			c.Send("hello_ok", "req", m.Value("req"))
		}
	}()
	for _, args := range [][]string{{"pipeline", "status", "7"}, {"pipeline", "resume", "nightly-1"}} {
		var out, errOut bytes.Buffer
		rc := run(append(args, "--addr", srv.Addr()), &out, &errOut)
		assert.Equal(t, 1, rc, "%v", args)
		assert.Contains(t, errOut.String(), "does not keep runs (no runs in its welcome's features)", "%v", args)
	}
	dir := t.TempDir()
	opt := filepath.Join(dir, "opt.yaml")
	require.NoError(t, os.WriteFile(opt, []byte("name: p\nkey: k\nsteps: [{id: a, type: echo}, {id: b, type: echo, depends_on: [a], optional: true}]\n"), 0o644))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pipeline", "run", opt}, "pipeline p uses optional steps: only a main control with the runs feature can run it"},
		{[]string{"pipeline", "run", opt, "--resume"}, "--resume: the main control at " + srv.Addr() + " does not keep runs"},
	} {
		var out, errOut bytes.Buffer
		rc := run(append(tc.args, "--addr", srv.Addr(), "--run-file", filepath.Join(dir, "p.run.json")), &out, &errOut)
		assert.Equal(t, 1, rc, "%v", tc.args)
		assert.Contains(t, errOut.String(), tc.want, "%v", tc.args)
	}
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"pipeline", "resume", "--addr", srv.Addr()}, &out, &errOut))
	assert.Contains(t, errOut.String(), "want one RUN (a run id or key), got 0")
	errOut.Reset()
	assert.Equal(t, 2, run([]string{"pipeline", "status", "1", "--run-file", "x.run.json", "--addr", srv.Addr()}, &out, &errOut))
	assert.Contains(t, errOut.String(), "give RUN or --run-file, not both")
	errOut.Reset()
	nokey := filepath.Join(t.TempDir(), "nokey.yaml")
	require.NoError(t, os.WriteFile(nokey, []byte("name: p\nsteps: [{id: a, type: echo}]\n"), 0o644))
	assert.Equal(t, 2, run([]string{"pipeline", "run", nokey, "--resume", "--addr", srv.Addr()}, &out, &errOut))
	assert.Contains(t, errOut.String(), "--resume needs the file's key: a run without one cannot be found again")
}

// A key that names a run made before submits nothing: the lines say the
// run was found, where they said "submitted as run 4".
func TestPipelineRun_DuplicateKeyFound(t *testing.T) {
	srv := runsServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	require.NoError(t, os.WriteFile(file, []byte("name: p\nkey: k-1\nsteps:\n  - {id: a, type: echo}\n"), 0o644))
	served := make(chan struct{})
	go func() {
		defer close(served)
		c := srv.Accept(t)
		m := next(t, c, "hello")
		c.Send("hello_ok", "req", m.Value("req"))
		m = next(t, c, "run_submit")
		c.Send("run_submitted", "req", m.Value("req"), "run_id", "4", "task_ids", "10", "duplicate", "true")
		m = next(t, c, "run_query")
		c.Send("run_state", "req", m.Value("req"), "run_id", "4", "name", "p", "key", "k-1", "state", "succeeded", "steps", "1",
			"created_ms", "1", "updated_ms", "2", "resumes", "0", "step.0.id", "a", "step.0.task_id", "10", "step.0.state", "succeeded")
	}()
	var out, errOut bytes.Buffer
	rc := run([]string{"pipeline", "run", file, "--addr", srv.Addr(), "--run-file", filepath.Join(dir, "p.run.json")}, &out, &errOut)
	<-served
	require.Equal(t, 0, rc, "%s%s", out.String(), errOut.String())
	assert.Contains(t, errOut.String(), "pipeline p: key k-1 names run 4, made before: nothing new was made")
	assert.Contains(t, out.String(), "pipeline p run 4 found by its key: 1 steps (follow with: apollo11 pipeline status 4 --addr "+srv.Addr()+")\n")
	assert.NotContains(t, out.String()+errOut.String(), "submitted")
}

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pipeline run takes its FILE among its flags, before or after them.
func TestPipelineRun_FileAmongFlags(t *testing.T) {
	const file = "../../docs/examples/nightly.yaml"
	for _, args := range [][]string{
		{"pipeline", "run", file, "--dry-run", "--var", "date=d1"},
		{"pipeline", "run", "--dry-run", file, "--var", "date=d1"},
		{"pipeline", "run", "--dry-run", "--var", "date=d1", file},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 0, run(args, &out, &errOut), "%v: %s", args, errOut.String())
		assert.Contains(t, out.String(), "key=nightly-d1/fetch", "%v", args)
	}
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"pipeline", "run", "--dry-run"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "want one pipeline FILE, got 0")
}

// pipeline status finds and reads its run file before it dials: with no
// main control up, "cannot reach" used to hide that there was no run to
// show (0 or 2 *.run.json files here, or a --run-file that is missing).
func TestPipelineStatus_RunFileBeforeDial(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		args  []string
		code  int
		msg   string
	}{
		{name: "no run file here", code: 2, msg: "give RUN or --run-file (no *.run.json file here)"},
		// The files are named: "found 2" alone left an ls to do first.
		{name: "two run files here", files: []string{"a.run.json", "b.run.json"}, code: 2,
			msg: "give RUN or --run-file: 2 *.run.json files here (a.run.json, b.run.json)"},
		{name: "missing --run-file", args: []string{"--run-file", "gone.run.json"}, code: 1, msg: "gone.run.json: no such file"},
		{name: "not a run file", files: []string{"bad.run.json"}, code: 1, msg: "bad.run.json: invalid character"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			for _, f := range tc.files {
				require.NoError(t, os.WriteFile(f, []byte("not json"), 0o644))
			}
			var out, errOut bytes.Buffer
			args := append([]string{"pipeline", "status", "--addr", "127.0.0.1:1"}, tc.args...) // nothing listens there
			assert.Equal(t, tc.code, run(args, &out, &errOut), errOut.String())
			assert.Contains(t, errOut.String(), tc.msg)
			assert.NotContains(t, errOut.String(), "cannot reach", "checked before dialling")
		})
	}
}

// A --var the file does not know is a bad command line (exit 2) that
// names it and the file's variables: --var data=... for date ran the
// file with date's default.
func TestPipelineRun_UnknownVar(t *testing.T) {
	const file = "../../docs/examples/nightly.yaml"
	var out, errOut bytes.Buffer
	rc := run([]string{"pipeline", "run", file, "--dry-run", "--var", "data=d1"}, &out, &errOut)
	assert.Equal(t, 2, rc, errOut.String())
	assert.Contains(t, errOut.String(), "unknown --var data: the file neither declares it in vars nor uses ${data} (its variables: date)")
	assert.NotContains(t, out.String(), "dry run", "nothing planned")
}

// --dry-run checks every output reference and prints the plan with the
// run attributes: optional, when, compensate.
func TestPipelineRun_DryRunStepSemantics(t *testing.T) {
	dir := t.TempDir()
	good := dir + "/good.yaml"
	require.NoError(t, os.WriteFile(good, []byte(`name: w
steps:
  - {id: fetch, type: echo, compensate: {type: rm, args: {p: "${steps.fetch.out.p}"}}}
  - {id: use, type: echo, depends_on: [fetch], optional: true, args: {p: "${steps.fetch.out.p}"}}
  - {id: page, type: echo, depends_on: [use], when: failed}
`), 0o644))
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"pipeline", "run", good, "--dry-run"}, &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "compensate type=rm\n         arg.p=${steps.fetch.out.p}")
	assert.Contains(t, out.String(), "use  type=echo  after=fetch  optional\n       arg.p=${steps.fetch.out.p}")
	assert.Contains(t, out.String(), "page  type=echo  after=use  when=failed")

	out.Reset()
	require.Equal(t, 0, run([]string{"pipeline", "run", good, "--dry-run", "--json"}, &out, &errOut), errOut.String())
	var plan struct {
		Steps []struct {
			Optional   bool   `json:"optional"`
			When       string `json:"when"`
			Compensate *struct {
				Type string            `json:"type"`
				Args map[string]string `json:"args"`
			} `json:"compensate"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &plan), out.String())
	require.Len(t, plan.Steps, 3)
	require.NotNil(t, plan.Steps[0].Compensate)
	assert.Equal(t, "rm", plan.Steps[0].Compensate.Type)
	assert.Equal(t, "${steps.fetch.out.p}", plan.Steps[0].Compensate.Args["p"])
	assert.True(t, plan.Steps[1].Optional)
	assert.Equal(t, "failed", plan.Steps[2].When)

	bad := dir + "/bad.yaml"
	require.NoError(t, os.WriteFile(bad, []byte("name: w\nsteps:\n  - {id: a, type: echo}\n  - {id: b, type: echo, args: {p: '${steps.a.out.p}'}}\n"), 0o644))
	out.Reset()
	errOut.Reset()
	assert.Equal(t, 1, run([]string{"pipeline", "run", bad, "--dry-run"}, &out, &errOut))
	assert.Contains(t, errOut.String(), `step 2 (line 4) "b": args.p: ${steps.a.out.p} reads step "a", which "b" does not depend on`)
	assert.Empty(t, out.String(), "nothing planned")
}

// The workflow example of README.md and docs/pipelines.md stays valid.
func TestPipelineRun_WorkflowExample(t *testing.T) {
	var out, errOut bytes.Buffer
	rc := run([]string{"pipeline", "run", "../../docs/examples/workflow.yaml", "--dry-run", "--var", "batch=b1", "--var", "check=fail"}, &out, &errOut)
	require.Equal(t, 0, rc, errOut.String())
	assert.Contains(t, out.String(), "check  type=fail  after=fetch")
	assert.Contains(t, out.String(), "alert  type=echo  after=check  max_attempts=1  key=workflow-b1/alert  when=failed")
}

// The resume example of README.md stays valid: no compensation (a
// compensated run is not resumed), and a check step an outside fix turns.
func TestPipelineRun_ResumeExample(t *testing.T) {
	var out, errOut bytes.Buffer
	rc := run([]string{"pipeline", "run", "../../docs/examples/resume.yaml", "--dry-run"}, &out, &errOut)
	require.Equal(t, 0, rc, errOut.String())
	assert.Contains(t, out.String(), "check  type=exec  after=fetch")
	assert.NotContains(t, out.String(), "compensate")
}

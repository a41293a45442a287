package main_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An optional step fails and the run still succeeds: its dependents run.
func TestE2E_RunOptionalStep(t *testing.T) {
	e := startRunsEnv(t)
	file := e.file("optional.yaml", `
name: opt
steps:
  - {id: a, type: echo}
  - {id: flaky, type: fail, depends_on: [a], optional: true, args: {retryable: "false", error: "not today"}}
  - {id: after, type: echo, depends_on: [flaky], args: {x: "1"}}
`)
	out, errOut, code := e.pipeline("run", file, "--wait", "--json")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	r := decodeRun(t, out)
	assert.Equal(t, "succeeded", r.State)
	_, st, errText := r.step(t, "flaky")
	assert.Equal(t, "failed", st)
	assert.Equal(t, "not today", errText)
	_, st, _ = r.step(t, "after")
	assert.Equal(t, "succeeded", st, "released, not cancelled")

	out, _, code = e.pipeline("status", strconv.FormatUint(r.RunID, 10))
	require.Equal(t, 0, code)
	assert.Regexp(t, `flaky +task \d+ +failed  optional  \(not today\)`, out, "the summary shows the optional failure")
}

// A when: failed step runs only when a dependency failed; otherwise it
// ends cancelled with error=skipped and the run succeeds.
func TestE2E_RunWhenFailed(t *testing.T) {
	e := startRunsEnv(t)
	const yaml = `
name: guarded
vars: {work: echo}
steps:
  - {id: work, type: "${work}", args: {retryable: "false"}, max_attempts: 1}
  - {id: alert, type: echo, depends_on: [work], when: failed, args: {msg: "work failed"}}
`
	file := e.file("when.yaml", yaml)
	out, errOut, code := e.pipeline("run", file, "--wait", "--json")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	ok := decodeRun(t, out)
	assert.Equal(t, "succeeded", ok.State)
	_, st, errText := ok.step(t, "alert")
	assert.Equal(t, "cancelled", st)
	assert.Equal(t, "skipped", errText)

	out, errOut, code = e.pipeline("run", file, "--var", "work=fail", "--wait", "--json")
	require.Equal(t, 1, code, "%s%s", out, errOut)
	bad := decodeRun(t, out)
	assert.Equal(t, "failed", bad.State)
	alertID, st, _ := bad.step(t, "alert")
	assert.Equal(t, "succeeded", st, "it ran, since work failed")
	assert.Equal(t, map[string]any{"msg": "work failed"}, e.task(alertID)["out"])
}

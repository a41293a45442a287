package main_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pipeline list shows the runs kept, filtered by state, and pipeline
// cancel ends one that has not ended, once.
func TestE2E_PipelineListAndCancel(t *testing.T) {
	e := startRunsEnv(t)
	done := e.file("done.yaml", "name: done\nkey: k-done\nsteps:\n  - {id: a, type: echo}\n")
	out, errOut, code := e.pipeline("run", done, "--wait", "--json")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	first := decodeRun(t, out)

	// No executor has this type, so the run stays running.
	stuck := e.file("stuck.yaml", "name: stuck\nkey: k-stuck\nsteps:\n  - {id: a, type: nobody}\n  - {id: b, type: echo, depends_on: [a]}\n")
	out, errOut, code = e.pipeline("run", stuck, "--json")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	second := decodeRun(t, out)

	out, errOut, code = e.pipeline("list")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, []string{
		strconv.FormatUint(first.RunID, 10) + "\tsucceeded\tdone\tk-done",
		strconv.FormatUint(second.RunID, 10) + "\trunning\tstuck\tk-stuck",
	}, strings.Split(strings.TrimSpace(out), "\n"))

	out, _, code = e.pipeline("list", "--state", "running")
	require.Equal(t, 0, code)
	assert.Equal(t, strconv.FormatUint(second.RunID, 10)+"\trunning\tstuck\tk-stuck", strings.TrimSpace(out))

	out, errOut, code = e.pipeline("list", "--limit", "1")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, 1, strings.Count(out, "\n"))
	assert.Contains(t, errOut, "--limit 1 --after "+strconv.FormatUint(first.RunID, 10), "the next page's command")

	out, errOut, code = e.pipeline("cancel", "k-stuck")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Equal(t, "run "+strconv.FormatUint(second.RunID, 10)+" cancelled: 2 tasks cancelled\n", out)

	out, _, code = e.pipeline("list", "--state", "cancelled,failed")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "\tcancelled\tstuck\t")

	_, errOut, code = e.pipeline("cancel", strconv.FormatUint(second.RunID, 10))
	assert.NotEqual(t, 0, code, "an ended run is not cancelled again")
	assert.Contains(t, errOut, "illegal_transition")

	_, errOut, code = e.pipeline("list", "--state", "bogus")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `--state "bogus": want one of running`)
}

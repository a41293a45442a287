package main_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
)

// typesJSON runs `types --json` and returns the rows by type name.
func typesJSON(t *testing.T, bin, addr string) map[string]map[string]any {
	t.Helper()
	out, errOut, code := cli(t, bin, addr, "types", "--json")
	require.Equal(t, 0, code, errOut)
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &rows))
	byName := map[string]map[string]any{}
	for _, r := range rows {
		byName[r["task_type"].(string)] = r
	}
	return byName
}

// TestCLI_PauseResumeSurvivesRestart pauses a type on the real binary: its
// task waits while another type runs on the same executor, through a
// restart, until resume; then it runs and shows its durations.
func TestCLI_PauseResumeSurvivesRestart(t *testing.T) {
	bin := testbin.Build(t)
	dir := t.TempDir()
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", dir)
	startExecutor(t, bin, mc.Addr, "--id", "ops-1", "--types", "echo,sleep", "--slots", "2")
	waitExecutors(t, bin, mc.Addr, 1)

	out, errOut, code := cli(t, bin, mc.Addr, "pause", "echo")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "task type echo paused\n", out)
	out, _, code = cli(t, bin, mc.Addr, "pause", "--json", "echo")
	require.Equal(t, 0, code)
	assert.JSONEq(t, `{"task_type":"echo","paused":true,"changed":false}`, out)

	held := submitID(t, bin, mc.Addr, "--type", "echo", "--arg", "a=b")
	_, errOut, code = cli(t, bin, mc.Addr, "submit", "--type", "sleep", "--arg", "ms=1", "--wait")
	require.Equal(t, 0, code, "another type still runs: %s", errOut)
	st := waitState(t, bin, mc.Addr, held, "pending")
	assert.Nil(t, st["executor_id"], "never dispatched")
	rows := typesJSON(t, bin, mc.Addr)
	assert.Equal(t, map[string]any{"task_type": "echo", "pending": 1.0, "running": 0.0, "paused": true, "executors": 1.0, "slots": 2.0,
		"handler": "echo", "version": "1", "args": []any{map[string]any{"name": "*", "kind": "string"}}}, rows["echo"])
	assert.Equal(t, false, rows["sleep"]["paused"])
	out, _, code = cli(t, bin, mc.Addr, "types")
	require.Equal(t, 0, code)
	assert.Regexp(t, `(?m)^echo\s+1\s+0\s+yes\s+1\s+2\s+1\s+-$`, out)
	out, _, _ = cli(t, bin, mc.Addr, "stats")
	assert.Contains(t, out, "types.paused 1\n")

	mc.Signal(syscall.SIGKILL)
	require.Error(t, mc.Wait(20*time.Second))
	mc2 := testbin.Start(t, bin, nil, "maincontrol", "--listen", mc.Addr, "--data-dir", dir)
	require.NoError(t, testbin.WaitWelcome(mc.Addr, 20*time.Second, nil), mc2.Output())
	waitExecutors(t, bin, mc.Addr, 1)
	assert.Equal(t, true, typesJSON(t, bin, mc.Addr)["echo"]["paused"], "a pause survives kill -9")
	waitState(t, bin, mc.Addr, held, "pending")

	out, errOut, code = cli(t, bin, mc.Addr, "resume", "echo")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "task type echo resumed\n", out)
	st = waitState(t, bin, mc.Addr, held, "succeeded")
	require.Contains(t, st, "queued_ms")
	require.Contains(t, st, "run_ms")
	assert.GreaterOrEqual(t, st["queued_ms"].(float64), 0.0)
	out, _, _ = cli(t, bin, mc.Addr, "status", strconv.FormatUint(held, 10))
	assert.Regexp(t, `(?m)^queued \S+  ran \S+$`, out)
}

func TestCLI_StateRepairAndProgress(t *testing.T) {
	bin := testbin.Build(t)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", t.TempDir())

	out, errOut, code := cli(t, bin, mc.Addr, "state-set", "mode", "drain now")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "mode set; state_version 1\n", out)
	_, errOut, code = cli(t, bin, mc.Addr, "state-set", "--if-version", "0", "mode", "x")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "conflict")
	assert.Contains(t, errOut, "state_version is 1, not 0")
	out, errOut, code = cli(t, bin, mc.Addr, "state-set", "--json", "--if-version", "1", "count", "7")
	require.Equal(t, 0, code, errOut)
	assert.JSONEq(t, `{"key":"count","state_version":2,"changed":true}`, out)
	out, _, code = cli(t, bin, mc.Addr, "state-del", "mode")
	require.Equal(t, 0, code)
	assert.Equal(t, "mode deleted; state_version 3\n", out)
	out, _, code = cli(t, bin, mc.Addr, "state-del", "--if-version", "3", "mode")
	require.Equal(t, 0, code)
	assert.Equal(t, "mode was not set; state_version 3\n", out)
	_, errOut, code = cli(t, bin, mc.Addr, "state-set", "Bad", "x")
	assert.Equal(t, 2, code, "a bad command line: %s", errOut)
	out, _, _ = cli(t, bin, mc.Addr, "state")
	assert.Equal(t, "state_version 3\ncount=7\n", out)

	// A running sleep reports its progress, which status shows.
	startExecutor(t, bin, mc.Addr, "--id", "ops-2", "--types", "sleep")
	id := submitID(t, bin, mc.Addr, "--type", "sleep", "--arg", "ms=60000")
	require.Eventually(t, func() bool {
		out, _, _ = cli(t, bin, mc.Addr, "status", strconv.FormatUint(id, 10))
		return slices.Contains(strings.Split(out, "\n"), "progress 0%  sleeping 60000 ms")
	}, 20*time.Second, 20*time.Millisecond, out)
	_, _, code = cli(t, bin, mc.Addr, "cancel", strconv.FormatUint(id, 10))
	require.Equal(t, 0, code)
}

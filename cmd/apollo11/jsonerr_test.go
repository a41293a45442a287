package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
)

// jsonError reads the one JSON line a command prints on stderr for its
// error under --json.
func jsonError(t *testing.T, stderr string) (code, message string, exit int) {
	t.Helper()
	require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
	var v struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Exit    int    `json:"exit"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(stderr), &v), "stderr %q", stderr)
	require.NotEmpty(t, v.Error.Message)
	return v.Error.Code, v.Error.Message, v.Error.Exit
}

// Under --json (or APOLLO11_JSON) an error is a JSON object on stderr,
// with a code a script can test; the exit codes are the text's.
func TestCLI_JSONErrors(t *testing.T) {
	bin := testbin.Build(t)
	tok := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tok, []byte("json-token\n"), 0o600))
	wrong := filepath.Join(t.TempDir(), "wrong")
	require.NoError(t, os.WriteFile(wrong, []byte("not-the-token\n"), 0o600))
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", "")
	authed := testbin.StartMaincontrol(t, bin, "--data-dir", "", "--token-file", tok)
	dead := testbin.FreeAddr(t)

	for _, tc := range []struct {
		name, addr string
		args       []string
		code       string
		exit       int
		message    string
	}{
		{"unknown task", mc.Addr, []string{"status", "--json", "99"}, "unknown_task", 1, "unknown task 99"},
		{"bad flag after --json", mc.Addr, []string{"status", "--json", "--bogus", "1"}, "usage", 2, "-bogus"},
		{"bad flag before --json", mc.Addr, []string{"list", "--state", "nope", "--json"}, "usage", 2, `--state "nope"`},
		{"submit bad priority", mc.Addr, []string{"submit", "--json", "--type", "x", "--priority", "12"}, "usage", 2, "--priority 12"},
		{"nobody listening", dead, []string{"stats", "--json"}, "unreachable", 1, "cannot reach"},
		{"submit, nobody listening", dead, []string{"submit", "--json", "--type", "x"}, "unreachable", 2, "cannot reach"},
		{"no token", authed.Addr, []string{"stats", "--json"}, "auth_required", 1, "requires auth"},
		{"wrong token", authed.Addr, []string{"cancel", "--json", "--token-file", wrong, "1"},
			"auth_failed", 1, "auth_failed"},
		{"cancel ended task", mc.Addr, []string{"cancel", "--json=true", "1"}, "unknown_task", 1, "unknown task 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, exit := cli(t, bin, tc.addr, tc.args...)
			assert.Empty(t, out, "errors go to stderr")
			code, msg, jexit := jsonError(t, errOut)
			assert.Equal(t, tc.code, code, msg)
			assert.Equal(t, tc.exit, exit)
			assert.Equal(t, tc.exit, jexit, "the object names the exit code")
			assert.Contains(t, msg, tc.message)
		})
	}

	t.Run("from the environment", func(t *testing.T) {
		cmd := exec.Command(bin, "status", "--addr", mc.Addr, "99")
		cmd.Env = append(os.Environ(), "APOLLO11_JSON=true")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		require.Error(t, cmd.Run())
		code, _, _ := jsonError(t, errb.String())
		assert.Equal(t, "unknown_task", code)
	})
	t.Run("text without --json", func(t *testing.T) {
		_, errOut, exit := cli(t, bin, mc.Addr, "status", "--json=false", "99")
		assert.Equal(t, 1, exit)
		assert.True(t, strings.HasPrefix(errOut, "apollo11 status: "), errOut)
	})
}

// stats --json gives numbers as numbers, the keys beyond the client's
// named fields included (they were strings: "connections": "3").
func TestCLI_StatsJSONNumbers(t *testing.T) {
	bin := testbin.Build(t)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", "")
	out, errOut, code := cli(t, bin, mc.Addr, "stats", "--json")
	require.Equal(t, 0, code, errOut)
	var st map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	for _, k := range []string{"executors", "state_version", "uptime_ns"} {
		assert.IsType(t, float64(0), st[k], k)
	}
	tasks, ok := st["tasks"].(map[string]any)
	require.True(t, ok)
	assert.Len(t, tasks, 8)
	for k, v := range tasks {
		assert.IsType(t, float64(0), v, "tasks.%s", k)
	}
	extra, ok := st["extra"].(map[string]any)
	require.True(t, ok)
	for _, k := range []string{"connections", "executors.known", "next_task_id", "pending_bytes", "state_bytes"} {
		assert.IsType(t, float64(0), extra[k], "extra %s: %v", k, extra[k])
	}
	assert.EqualValues(t, 1, extra["next_task_id"])
	assert.Equal(t, true, extra["available"])
}

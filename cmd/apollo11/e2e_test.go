package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/internal/testbin"
)

// cli runs one client command against addr and returns stdout, stderr and
// the exit code.
func cli(t *testing.T, bin, addr string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{args[0], "--addr", addr}, args[1:]...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "run %v: %v", args, err)
		code = ee.ExitCode()
	}
	return out.String(), errb.String(), code
}

func startExecutor(t *testing.T, bin, addr string, args ...string) *testbin.Proc {
	t.Helper()
	return testbin.Start(t, bin, nil, append([]string{"executor", "--connect", addr, "--log-level", "debug"}, args...)...)
}

// waitState polls `status --json` until the task is in state.
func waitState(t *testing.T, bin, addr string, id uint64, state string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(patience.Scale(10 * time.Second))
	var last map[string]any
	for time.Now().Before(deadline) {
		out, _, code := cli(t, bin, addr, "status", "--json", strconv.FormatUint(id, 10))
		if code == 0 {
			require.NoError(t, json.Unmarshal([]byte(out), &last))
			if last["state"] == state {
				return last
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("task %d not %s in time; last: %v", id, state, last)
	return nil
}

func submitID(t *testing.T, bin, addr string, args ...string) uint64 {
	t.Helper()
	out, errOut, code := cli(t, bin, addr, append([]string{"submit", "--json"}, args...)...)
	require.Equal(t, 0, code, "%s%s", out, errOut)
	var v struct {
		TaskID uint64 `json:"task_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	return v.TaskID
}

func TestCLI_EndToEnd(t *testing.T) {
	bin := testbin.Build(t)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", t.TempDir())
	startExecutor(t, bin, mc.Addr, "--id", "e2e-1", "--types", "echo,sleep,fail", "--slots", "2")

	out, errOut, code := cli(t, bin, mc.Addr, "submit", "--type", "echo", "--arg", "msg=hi there", "--arg", "n=1", "--wait")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "succeeded")
	assert.Contains(t, out, "out.msg=hi there\n")

	out, _, code = cli(t, bin, mc.Addr, "submit", "--type", "fail", "--arg", "retryable=false", "--arg", "error=boom", "--wait")
	assert.Equal(t, 1, code, "a failed task exits 1")
	assert.Contains(t, out, "failed")
	assert.Contains(t, out, "error: boom")

	id := submitID(t, bin, mc.Addr, "--type", "sleep", "--arg", "ms=60000", "--key", "k1")
	waitState(t, bin, mc.Addr, id, "running")
	out, _, code = cli(t, bin, mc.Addr, "submit", "--type", "sleep", "--key", "k1")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "task "+strconv.FormatUint(id, 10)+" (duplicate key")
	out, _, code = cli(t, bin, mc.Addr, "cancel", strconv.FormatUint(id, 10))
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "cancelled")
	st := waitState(t, bin, mc.Addr, id, "cancelled")
	assert.Equal(t, "sleep", st["task_type"])
	assert.EqualValues(t, 3, st["max_attempts"], "status --json uses the wire's key names")

	_, errOut, code = cli(t, bin, mc.Addr, "cancel", strconv.FormatUint(id, 10))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "illegal_transition")
	assert.True(t, strings.HasPrefix(errOut, "apollo11 cancel: main control error"), errOut)
	_, errOut, code = cli(t, bin, mc.Addr, "status", "999")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "unknown_task")

	out, _, code = cli(t, bin, mc.Addr, "list", "--state", "succeeded", "--json")
	require.Equal(t, 0, code)
	var list struct {
		Count int
		IDs   []uint64
	}
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	assert.Equal(t, 1, list.Count)

	_, errOut, code = cli(t, bin, mc.Addr, "list", "--state", "succeeded", "--limit", "0")
	assert.Equal(t, 2, code, "a bad command line")
	assert.Contains(t, errOut, "--limit 0: want 1 to 1000")

	out, _, code = cli(t, bin, mc.Addr, "stats")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "succeeded=1 failed=1 cancelled=1")
	assert.Contains(t, out, "executors 1")

	out, _, code = cli(t, bin, mc.Addr, "state", "--json")
	require.Equal(t, 0, code)
	assert.Contains(t, out, `"state_version": 0`)
	out, _, code = cli(t, bin, mc.Addr, "debug", "on")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "frame logging on")

	_, errOut, code = cli(t, bin, mc.Addr, "submit")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errOut, "--type is required")
	// Errors of submit exit 2: 1 is a failed task.
	_, errOut, code = cli(t, bin, mc.Addr, "submit", "--type", "echo", "--max-attempts", "0")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--max-attempts 0: must be at least 1")
	// A stray word would make the flag package drop every flag after it.
	out, errOut, code = cli(t, bin, mc.Addr, "submit", "--type", "echo", "stray", "--wait")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, errOut, `unexpected argument "stray"`)
	assert.Empty(t, out, "nothing submitted")
	_, errOut, code = cli(t, bin, "127.0.0.1:1", "submit", "--type", "echo", "--wait")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "cannot reach the main control")
	_, errOut, code = cli(t, bin, "127.0.0.1:1", "stats")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "cannot reach the main control")
	// A bad command line exits 2, its error printed once.
	_, errOut, code = cli(t, bin, mc.Addr, "stats", "--nope")
	assert.Equal(t, 2, code)
	assert.Equal(t, 1, strings.Count(errOut, "flag provided but not defined: -nope"), errOut)
	// A wait that ends first: the id on stderr at once, then where the
	// task stands, and exit 4.
	out, errOut, code = cli(t, bin, mc.Addr, "submit", "--type", "nobody-runs-this", "--wait", "--wait-timeout", "300ms")
	assert.Equal(t, 4, code, out)
	assert.Empty(t, out)
	assert.Regexp(t, `task \d+ submitted; waiting for it to end\n`, errOut)
	assert.Regexp(t, `gave up waiting after --wait-timeout 300ms: task \d+ is still pending`, errOut)
	out, errOut, code = cli(t, bin, mc.Addr, "submit", "--type", "nobody-runs-this", "--wait", "--wait-timeout", "300ms", "--json")
	assert.Equal(t, 4, code, errOut)
	var unknown struct {
		TaskID  uint64 `json:"task_id"`
		State   string
		Outcome string
	}
	require.NoError(t, json.Unmarshal([]byte(out), &unknown), "--json: what is known, on stdout: %q", out)
	assert.NotZero(t, unknown.TaskID)
	assert.Equal(t, "pending", unknown.State)
	assert.Equal(t, "unknown", unknown.Outcome)
	// A wait-timeout that ran out before the submit was sent: nothing
	// submitted, exit 2.
	_, errOut, code = cli(t, bin, mc.Addr, "submit", "--type", "echo", "--wait", "--wait-timeout", "1ns")
	assert.Equal(t, 2, code, errOut)
	assert.Contains(t, errOut, "nothing submitted: --wait-timeout 1ns ran out")
	// Flags may follow operands.
	out, _, code = cli(t, bin, mc.Addr, "status", strconv.FormatUint(id, 10), "--json")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, `"state": "cancelled"`)

	// Text output quotes a value that could pass for more lines.
	out, errOut, code = cli(t, bin, mc.Addr, "submit", "--type", "echo", "--arg", "nl=line1\nout.fake=evil", "--wait")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `out.nl="line1\nout.fake=evil"`+"\n")
	assert.NotContains(t, out, "\nout.fake=evil\n")

	// list --all starts after --after; an empty listing is [] either way.
	out, _, code = cli(t, bin, mc.Addr, "list", "--state", "succeeded", "--all", "--json")
	require.Equal(t, 0, code)
	var every struct{ IDs []uint64 }
	require.NoError(t, json.Unmarshal([]byte(out), &every))
	require.Len(t, every.IDs, 2)
	out, _, code = cli(t, bin, mc.Addr, "list", "--state", "succeeded", "--all", "--json", "--after", strconv.FormatUint(every.IDs[0], 10))
	require.Equal(t, 0, code)
	require.NoError(t, json.Unmarshal([]byte(out), &every))
	assert.Len(t, every.IDs, 1)
	out, _, code = cli(t, bin, mc.Addr, "list", "--state", "succeeded", "--all", "--limit", "1", "--json")
	require.Equal(t, 0, code)
	require.NoError(t, json.Unmarshal([]byte(out), &every))
	assert.Len(t, every.IDs, 2, "--all walks pages of --limit ids")
	out, _, code = cli(t, bin, mc.Addr, "list", "--state", "waiting", "--all", "--json")
	require.Equal(t, 0, code)
	assert.Contains(t, out, `"ids": []`)
}

// The quick start: `apollo11 dev` serves submits with its own executors
// and stops cleanly on SIGTERM.
func TestDev_QuickStart(t *testing.T) {
	bin := testbin.Build(t)
	addr := testbin.FreeAddr(t)
	dev := testbin.Start(t, bin, nil, "dev", "--listen", addr, "--data-dir", t.TempDir())
	require.NoError(t, testbin.WaitWelcome(addr, 20*time.Second, nil), dev.Output())
	out, errOut, code := cli(t, bin, addr, "submit", "--type", "echo", "--arg", "msg=hi", "--wait")
	require.Equal(t, 0, code, "%s%s\ndev output:\n%s", out, errOut, dev.Output())
	assert.Contains(t, out, "out.msg=hi\n")
	dev.Signal(syscall.SIGTERM)
	require.NoError(t, dev.Wait(10*time.Second), "graceful stop exits 0\n%s", dev.Output())
}

// inspect --json names its fields as the wire does and states by name.
func TestInspect_JSON(t *testing.T) {
	bin := testbin.Build(t)
	dir := t.TempDir()
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", dir)
	id := submitID(t, bin, mc.Addr, "--type", "nobody-serves-this", "--arg", "a=1")
	mc.Signal(syscall.SIGTERM)
	require.NoError(t, mc.Wait(20*time.Second), mc.Output())

	cmd := exec.Command(bin, "inspect", "--data-dir", dir, "--json", strconv.FormatUint(id, 10))
	out, err := cmd.Output()
	require.NoError(t, err)
	var rep struct {
		Dir struct {
			Segments []struct {
				Name    string `json:"name"`
				Records int    `json:"records"`
			} `json:"segments"`
		} `json:"dir"`
		Tasks map[string]int `json:"tasks"`
		Task  struct {
			ID    uint64 `json:"task_id"`
			State string `json:"state"`
			Type  string `json:"task_type"`
			Args  string `json:"args"`
		} `json:"task"`
	}
	require.NoError(t, json.Unmarshal(out, &rep), "%s", out)
	require.NotEmpty(t, rep.Dir.Segments, "%s", out)
	assert.NotEmpty(t, rep.Dir.Segments[0].Name)
	assert.Equal(t, 1, rep.Tasks["pending"])
	assert.Equal(t, id, rep.Task.ID)
	assert.Equal(t, "pending", rep.Task.State)
	assert.Equal(t, "nobody-serves-this", rep.Task.Type)
	assert.Equal(t, "arg.a=1", rep.Task.Args)

	// Ids a --recover-truncate cut may have handed out are skipped at the
	// next start: inspect says the same next id.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "lost-records"), []byte("7\n"), 0o600))
	out, err = exec.Command(bin, "inspect", "--data-dir", dir, "--json").Output()
	require.NoError(t, err, "%s", out)
	var next struct {
		NextTaskID uint64 `json:"next_task_id"`
	}
	require.NoError(t, json.Unmarshal(out, &next))
	assert.Equal(t, id+1+7, next.NextTaskID)
	require.NoError(t, os.Remove(filepath.Join(dir, "lost-records")))

	// A task id nothing is known of: the report, then exit 1.
	cmd = exec.Command(bin, "inspect", "--data-dir", dir, strconv.FormatUint(id+998, 10))
	out, err = cmd.Output()
	var unknown *exec.ExitError
	require.ErrorAs(t, err, &unknown, "%s", out)
	assert.Equal(t, 1, unknown.ExitCode())
	assert.Contains(t, string(out), "is not known")

	// A dir the main control would refuse: the report, then exit 1.
	segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err)
	require.NotEmpty(t, segs)
	snaps, err := filepath.Glob(filepath.Join(dir, "snapshot-*"))
	require.NoError(t, err)
	for _, f := range snaps { // replay must then read the whole log
		require.NoError(t, os.Remove(f))
	}
	b, err := os.ReadFile(segs[0])
	require.NoError(t, err)
	// A second copy of the records (after the 16-byte segment header)
	// repeats LSNs: corrupt mid-log, not a torn tail.
	b = append(b, b[16:]...)
	require.NoError(t, os.WriteFile(segs[0], b, 0o644))
	cmd = exec.Command(bin, "inspect", "--data-dir", dir)
	out, err = cmd.Output()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	assert.Equal(t, 1, ee.ExitCode())
	assert.Contains(t, string(out), "would NOT start")
}

// A main control that refuses the client's token was reached: the error
// says refused, not "cannot reach" (which sends users to the network).
func TestCLI_AuthRefusal(t *testing.T) {
	bin := testbin.Build(t)
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	require.NoError(t, os.WriteFile(good, []byte("s3cret-token\n"), 0o600))
	require.NoError(t, os.WriteFile(bad, []byte("wrong-token\n"), 0o600))
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", "", "--token-file", good)

	_, errOut, code := cli(t, bin, mc.Addr, "stats")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "refused this client")
	assert.Contains(t, errOut, "requires auth")
	assert.Contains(t, errOut, "--token-file FILE", "the error says how to give the token")
	assert.NotContains(t, errOut, "cannot reach")
	_, errOut, code = cli(t, bin, mc.Addr, "stats", "--token-file", bad)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "refused this client")
	assert.Contains(t, errOut, "auth_failed")
	_, errOut, code = cli(t, bin, mc.Addr, "stats", "--token-file", good)
	assert.Equal(t, 0, code, errOut)
}

// A task of a type no executor takes waits for good: submit --wait says
// so on stderr once it has been pending --pending-hint past its delay,
// and keeps waiting. A task that runs, or whose delay has not passed,
// gets no hint.
func TestCLI_SubmitWaitPendingHint(t *testing.T) {
	bin := testbin.Build(t)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", "")
	startExecutor(t, bin, mc.Addr, "--id", "hint-1", "--types", "echo")
	waitExecutors(t, bin, mc.Addr, 1)

	_, errOut, code := cli(t, bin, mc.Addr, "submit", "--type", "nosuchtype", "--wait", "--pending-hint", "200ms", "--wait-timeout", "3s")
	assert.Equal(t, 4, code, "the wait ran out: %s", errOut)
	assert.Contains(t, errOut, `is still pending after 200ms: is an executor that takes type "nosuchtype" connected? `+
		"(executors connected: 1; apollo11 executor runs only echo, sleep, fail and exec: "+
		"a type of your own needs an executor built with the executor package)\n")
	assert.Equal(t, 1, strings.Count(errOut, "is still pending after"), "once: %s", errOut)

	_, errOut, code = cli(t, bin, mc.Addr, "submit", "--type", "nosuchtype", "--delay", "2s", "--wait", "--pending-hint", "200ms", "--wait-timeout", "1s")
	assert.Equal(t, 4, code)
	assert.NotContains(t, errOut, "is still pending after", "its delay has not passed")

	_, errOut, code = cli(t, bin, mc.Addr, "submit", "--type", "echo", "--wait", "--pending-hint", "2s")
	assert.Equal(t, 0, code, errOut)
	assert.NotContains(t, errOut, "is still pending after")

	_, errOut, code = cli(t, bin, mc.Addr, "submit", "--type", "echo", "--wait", "--pending-hint", "-1s")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--pending-hint -1s: must not be negative")
}

// waitExecutors polls `stats --json` until n executors are registered.
func waitExecutors(t *testing.T, bin, addr string, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		out, _, code := cli(t, bin, addr, "stats", "--json")
		var st struct {
			Executors int `json:"executors"`
		}
		return code == 0 && json.Unmarshal([]byte(out), &st) == nil && st.Executors == n
	}, 10*time.Second, 20*time.Millisecond)
}

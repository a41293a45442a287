package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/fakemain"
	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/internal/testbin"
	"github.com/apollo11/apollo11/wire"
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

// silentMainControl completes the handshake of every connection, then
// reads and never answers: a main control that hangs, or a network that
// stalls after connecting.
func silentMainControl(t *testing.T) string {
	return fakeListener(t, func(c net.Conn) {
		_ = fakemain.WriteMsg(c, "welcome", "proto", "1", "max_frame", "1048576", "auth", "none")
		r := wire.NewReader(c, 0)
		if m, err := r.Next(); err == nil {
			_ = fakemain.WriteMsg(c, "hello_ok", "req", m.Value("req"))
		}
		_, _ = io.Copy(io.Discard, c)
	})
}

// muteMainControl accepts connections and never writes: a main control
// that hangs before its welcome.
func muteMainControl(t *testing.T) string {
	return fakeListener(t, nil)
}

// fakeListener accepts connections on a loopback port until the test
// ends, then closes them all; serve, if not nil, runs for each in a
// goroutine of its own.
func fakeListener(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	closed := false
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		closed = true
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if closed { // accepted as the test ended: no cleanup will close it
				mu.Unlock()
				c.Close()
				return
			}
			conns = append(conns, c)
			mu.Unlock()
			if serve != nil {
				go serve(c)
			}
		}
	}()
	return ln.Addr().String()
}

// A submit sent but never confirmed may have made its task: exit 4 (the
// outcome is unknown), not 2 (nothing submitted), with or without --wait,
// which is bounded by --request-timeout too. Submitting again finds the
// task out only with a --key: without one, the advice is the task lists.
func TestCLI_SubmitNotConfirmed(t *testing.T) {
	bin := testbin.Build(t)
	addr := silentMainControl(t)
	tests := []struct {
		name   string
		args   []string
		advice string
		not    string
	}{
		{name: "no key", advice: "the task may exist, and submitting again may make a second one; `apollo11 list --addr " + addr +
			" --state pending` (or another --state) lists the tasks. With --key, a retry with the same key returns the task instead",
			not: "submit again with the same --key"},
		{name: "no key, wait", args: []string{"--wait"}, advice: "`apollo11 list --addr " + addr + " --state pending`",
			not: "submit again with the same --key"},
		{name: "key", args: []string{"--key", "k1"}, advice: "the task may exist; submit again with the same --key to find out"},
		{name: "key, wait", args: []string{"--key", "k1", "--wait"}, advice: "submit again with the same --key to find out"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"submit", "--type", "echo", "--request-timeout", "300ms"}, tc.args...)
			start := time.Now()
			out, errOut, code := cli(t, bin, addr, args...)
			assert.Equal(t, 4, code, errOut)
			assert.Less(t, time.Since(start), 10*time.Second, "bounded by --request-timeout")
			assert.Contains(t, errOut, "the submit was sent but not confirmed (no reply within --request-timeout 300ms): ")
			assert.Contains(t, errOut, tc.advice)
			if tc.not != "" {
				assert.NotContains(t, errOut, tc.not)
			}
			assert.Empty(t, out)
		})
	}
	out, _, code := cli(t, bin, addr, "submit", "--type", "echo", "--request-timeout", "300ms", "--json")
	assert.Equal(t, 4, code)
	assert.Contains(t, out, `"outcome": "unknown"`)
}

// Every client command whose request, or handshake, gets no reply says
// that none came within --request-timeout, and its value, once: status
// said only "query: context deadline exceeded", and list alone named the
// flag.
func TestCLI_RequestTimeoutNamed(t *testing.T) {
	bin := testbin.Build(t)
	silent, mute := silentMainControl(t), muteMainControl(t)
	runFile := filepath.Join(t.TempDir(), "p.run.json")
	require.NoError(t, os.WriteFile(runFile, []byte(`{"name":"p","steps":[{"id":"a","task_id":1}]}`), 0o644))
	file := filepath.Join(t.TempDir(), "p.yaml")
	require.NoError(t, os.WriteFile(file, []byte("name: p\nsteps: [{id: a, type: echo}]\n"), 0o644))
	tests := []struct {
		addr string
		args []string
	}{
		{silent, []string{"status", "1"}},
		{silent, []string{"cancel", "1"}},
		{silent, []string{"list", "--state", "pending"}},
		{silent, []string{"list", "--state", "pending", "--all"}},
		{silent, []string{"stats"}},
		{silent, []string{"state"}},
		{silent, []string{"state", "k"}},
		{silent, []string{"debug", "on"}},
		{silent, []string{"pipeline", "status", "--run-file", runFile}},
		{silent, []string{"pipeline", "run", file}}, // its submits had no timeout at all
		{silent, []string{"pipeline", "run", file, "--wait"}},
		{mute, []string{"status", "1"}}, // no welcome: the dial times out
		{mute, []string{"pipeline", "status", "--run-file", runFile}},
	}
	for _, tc := range tests {
		name := strings.NewReplacer(runFile, "F", file, "F").Replace(strings.Join(tc.args, " "))
		if tc.addr == mute {
			name = "no welcome " + name
		}
		t.Run(name, func(t *testing.T) {
			// --addr last: `pipeline status` takes its flags after "status".
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang fails, not blocks
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, append(slices.Clone(tc.args), "--request-timeout", "300ms", "--addr", tc.addr)...)
			cmd.Dir = t.TempDir() // where pipeline run would record a run
			var errOut bytes.Buffer
			cmd.Stderr = &errOut
			err := cmd.Run()
			ee, ok := err.(*exec.ExitError)
			require.True(t, ok, "want exit 1, got %v", err)
			assert.Equal(t, 1, ee.ExitCode(), errOut.String())
			assert.Equal(t, 1, strings.Count(errOut.String(), "no reply within --request-timeout 300ms"), errOut.String())
		})
	}
}

func TestExecutorDaemon_DrainThenBye(t *testing.T) {
	bin := testbin.Build(t)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", "", "--heartbeat-timeout", "30s")
	// The first task runs until the test opens its gate, after the drain
	// began. A timed task could end before the signal on a busy machine.
	gate := filepath.Join(t.TempDir(), "gate")
	ex := startExecutor(t, bin, mc.Addr, "--id", "drain-1", "--types", "exec",
		"--allow-exec", "--exec-allow", "/bin/sh", "--drain-timeout", "10m")
	short := submitID(t, bin, mc.Addr, "--type", "exec", "--arg", "argv.0=/bin/sh", "--arg", "argv.1=-c",
		"--arg", "argv.2=until [ -e "+gate+" ]; do sleep 0.02; done")
	waitState(t, bin, mc.Addr, short, "running")
	ex.Signal(syscall.SIGTERM)
	require.Eventually(t, func() bool { return strings.Contains(ex.Output(), "msg=draining") },
		patience.Scale(10*time.Second), 10*time.Millisecond, "no drain began\n%s", ex.Output())
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	waitState(t, bin, mc.Addr, short, "succeeded") // finished within the drain
	require.NoError(t, ex.Wait(patience.Scale(10*time.Second)), "graceful stop exits 0\n%s", ex.Output())
	assert.Contains(t, ex.Output(), "bye")

	// A task longer than the drain: cancelled by the executor, then bye,
	// and the main control re-queues it at once (no 30 s heartbeat wait).
	ex = startExecutor(t, bin, mc.Addr, "--id", "drain-2", "--types", "sleep", "--drain-timeout", "200ms")
	long := submitID(t, bin, mc.Addr, "--type", "sleep", "--arg", "ms=60000")
	waitState(t, bin, mc.Addr, long, "running")
	ex.Signal(syscall.SIGTERM)
	require.NoError(t, ex.Wait(patience.Scale(10*time.Second)), "%s", ex.Output())
	st := waitState(t, bin, mc.Addr, long, "pending")
	assert.EqualValues(t, 1, st["attempt"], "bye used the attempt")
}

func TestExecutorDaemon_ReconnectsAfterMainControlRestart(t *testing.T) {
	bin := testbin.Build(t)
	dir := t.TempDir()
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", dir)
	ex := startExecutor(t, bin, mc.Addr, "--id", "re-1", "--types", "echo")
	_, _, code := cli(t, bin, mc.Addr, "submit", "--type", "echo", "--wait")
	require.Equal(t, 0, code)
	mc.Signal(syscall.SIGTERM)
	require.NoError(t, mc.Wait(20*time.Second))
	mc2 := testbin.Start(t, bin, nil, "maincontrol", "--listen", mc.Addr, "--data-dir", dir)
	require.NoError(t, testbin.WaitWelcome(mc.Addr, 20*time.Second, nil), mc2.Output())
	out, errOut, code := cli(t, bin, mc.Addr, "submit", "--type", "echo", "--arg", "a=b", "--wait", "--wait-timeout", "20s")
	require.Equal(t, 0, code, "%s%s\nexecutor:\n%s", out, errOut, ex.Output())
	assert.Contains(t, out, "out.a=b")
}

// An executor asked to run exec without --allow-exec does not start: it
// would take exec tasks and fail every one, for good.
func TestExecutorDaemon_ExecNotAllowed(t *testing.T) {
	bin := testbin.Build(t)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", "")
	ex := testbin.Start(t, bin, nil, "executor", "--connect", mc.Addr, "--id", "noexec", "--types", "echo,exec")
	_ = ex.Wait(20 * time.Second)
	require.True(t, ex.Exited(), "the executor should exit at once")
	assert.Equal(t, 2, ex.ExitCode(), "a bad command line")
	assert.Contains(t, ex.Output(), "--types exec needs --allow-exec")
}

func TestExecutorDaemon_ExecAllowedAndCancel(t *testing.T) {
	bin := testbin.Build(t)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", "")
	startExecutor(t, bin, mc.Addr, "--id", "exec-1", "--types", "exec,sleep", "--slots", "2",
		"--allow-exec", "--exec-allow", "/bin/echo,/bin/sh")
	out, errOut, code := cli(t, bin, mc.Addr, "submit", "--type", "exec", "--arg", "argv=/bin/echo hi there", "--wait")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `out.stdout="hi there\n"`+"\n", "quoted: the output's newline is not a line of the listing")
	assert.Contains(t, out, "out.exit_code=0")

	out, _, code = cli(t, bin, mc.Addr, "submit", "--type", "exec", "--arg", "argv=/bin/ls /", "--wait")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "not on the --exec-allow list")

	// cancel kills the whole process group, grandchildren included.
	pidFile := filepath.Join(t.TempDir(), "pid")
	id := submitID(t, bin, mc.Addr, "--type", "exec", "--arg", "argv.0=/bin/sh", "--arg", "argv.1=-c",
		"--arg", "argv.2=sleep 60 & echo $! > "+pidFile+"; wait")
	waitState(t, bin, mc.Addr, id, "running")
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, syscall.Kill(pid, 0), "grandchild runs")
	_, _, code = cli(t, bin, mc.Addr, "cancel", strconv.FormatUint(id, 10))
	require.Equal(t, 0, code)
	assert.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 5*time.Second, 20*time.Millisecond,
		"the grandchild %d was killed with its group", pid)

	// A hung task hits its timeout.
	out, _, code = cli(t, bin, mc.Addr, "submit", "--type", "sleep", "--arg", "ms=60000", "--timeout", "300ms",
		"--max-attempts", "1", "--wait")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "timeout")
}

// pipelineFile builds the binary and writes a pipeline file in a temp dir.
func pipelineFile(t *testing.T, yaml string) (bin, dir, file string) {
	t.Helper()
	bin, dir = testbin.Build(t), t.TempDir()
	file = filepath.Join(dir, "pipeline.yaml")
	require.NoError(t, os.WriteFile(file, []byte(yaml), 0o644))
	return bin, dir, file
}

func TestCLI_Pipeline(t *testing.T) {
	bin, dir, file := pipelineFile(t, `
name: p
steps:
  - {id: a, type: echo, args: {x: "${x}"}}
  - {id: b, type: fail, depends_on: [a], args: {retryable: "false"}}
  - {id: c, type: echo, depends_on: [b]}
`)
	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(bin, append([]string{"pipeline"}, args...)...)
		cmd.Dir = dir
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return out.String(), errb.String(), ee.ExitCode()
		}
		require.NoError(t, err)
		return out.String(), errb.String(), 0
	}
	_, errOut, code := run("run", file, "--dry-run")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "undefined variable ${x}")
	out, _, code := run("run", file, "--dry-run", "--var", "x=1")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "pipeline p: 3 steps, longest chain 3 (a -> b -> c)")
	assert.Contains(t, out, "nothing submitted")

	out, errOut, code = run("run", file, "--dry-run", "--var", "x=1", "--json")
	require.Equal(t, 0, code, errOut)
	var plan struct {
		Name   string `json:"name"`
		DryRun bool   `json:"dry_run"`
		Steps  []struct {
			ID        string   `json:"id"`
			DependsOn []string `json:"depends_on"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &plan), out)
	assert.True(t, plan.DryRun)
	require.Len(t, plan.Steps, 3)
	assert.Equal(t, []string{"b"}, plan.Steps[2].DependsOn)

	for _, args := range [][]string{{"bogus"}, {"run", "--dry-run"}, {"run", file, file, "--dry-run"}} {
		_, errOut, code = run(args...)
		assert.Equal(t, 2, code, "a bad command line: %v: %s", args, errOut)
	}

	cyc := filepath.Join(dir, "cyc.yaml")
	require.NoError(t, os.WriteFile(cyc, []byte("name: c\nsteps:\n  - {id: a, type: echo, depends_on: [b]}\n  - {id: b, type: echo, depends_on: [a]}\n"), 0o644))
	_, errOut, code = run("run", cyc, "--dry-run")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "dependency cycle: a -> b -> a")

	mc := testbin.StartMaincontrol(t, bin, "--data-dir", "")
	startExecutor(t, bin, mc.Addr, "--id", "pipe-1", "--types", "echo,fail")
	out, errOut, code = run("run", file, "--addr", mc.Addr, "--var", "x=1", "--wait")
	assert.Equal(t, 1, code, "%s%s", out, errOut)
	assert.Contains(t, out, "succeeded")
	assert.Contains(t, out, "failed")
	assert.Contains(t, out, "(dependency ")
	assert.Contains(t, out, "pipeline p: 2 of 3 steps did not succeed")
	out, errOut, code = run("status", "--addr", mc.Addr)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "pipeline p\n")
	assert.Contains(t, out, "cancelled")

	out, errOut, code = run("run", file, "--addr", mc.Addr, "--var", "x=2", "--wait", "--json", "--run-file", "j.run.json")
	assert.Equal(t, 1, code, "%s%s", out, errOut)
	var report struct {
		Steps []struct {
			ID, State string
		} `json:"steps"`
		Failed int `json:"failed"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &report), out)
	assert.Equal(t, 2, report.Failed)
	assert.Len(t, report.Steps, 3)
}

// pipeline run --wait records the run before it waits, so that `pipeline
// status` follows it meanwhile; when the wait ends first (the main
// control is gone) it exits 4, not 1: the steps were not seen to fail.
func TestCLI_PipelineWaitEndsFirst(t *testing.T) {
	bin, dir, file := pipelineFile(t, `
name: slow
steps:
  - {id: nap, type: sleep, args: {ms: "60000"}}
  - {id: after, type: echo, depends_on: [nap]}
`)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", "")
	startExecutor(t, bin, mc.Addr, "--id", "slow-1", "--types", "sleep,echo")
	// It reconnects for --reconnect-timeout before it gives up.
	p := testbin.Start(t, bin, nil, "pipeline", "run", file, "--addr", mc.Addr, "--wait",
		"--run-file", filepath.Join(dir, "slow.run.json"), "--reconnect-timeout", "500ms")
	var out string
	var code int
	require.Eventually(t, func() bool {
		cmd := exec.Command(bin, "pipeline", "status", "--addr", mc.Addr, "--run-file", filepath.Join(dir, "slow.run.json"))
		b, err := cmd.Output()
		out, code = string(b), cmd.ProcessState.ExitCode()
		return err == nil && strings.Contains(out, "running")
	}, 10*time.Second, 50*time.Millisecond, "status while the run waits: %d %s", code, out)
	assert.Contains(t, out, "waiting", "the second step waits for the first")
	assert.False(t, p.Exited())

	mc.Kill()
	_ = p.Wait(10 * time.Second) // an error: it exits non-zero
	require.True(t, p.Exited(), "the wait ends when the main control is gone")
	assert.Equal(t, 4, p.ExitCode(), p.Output())
	assert.Contains(t, p.Output(), "steps not followed to their end")
	assert.Contains(t, p.Output(), "the steps go on")
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

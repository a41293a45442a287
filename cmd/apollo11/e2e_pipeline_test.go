package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
)

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
	assert.Contains(t, out, "pipeline p: 2 of 3 steps did not succeed (run 1 failed)")
	out, errOut, code = run("status", "--addr", mc.Addr)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "run 1 p: failed\n", "the run file names the run the main control keeps")
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
	assert.Contains(t, p.Output(), "wait for run 1")
	assert.Contains(t, p.Output(), "the run goes on (follow with: apollo11 pipeline status 1 --addr "+mc.Addr+")")
}

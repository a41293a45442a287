package main_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
)

// The built-in handlers describe themselves to the real main control:
// `types` shows their version, args and timeout; a task whose args break
// sleep's schema fails at its first attempt with invalid_args; and a dry
// run checks a pipeline's args against the descriptions, offline too.
func TestCLI_HandlerDescriptions(t *testing.T) {
	bin, dir, file := pipelineFile(t, `
name: chk
steps:
  - {id: nap, type: sleep, args: {ms: "soon"}}
  - {id: say, type: echo, depends_on: [nap], args: {any: "x"}}
  - {id: boom, type: fail, args: {retryable: "false", extra: "1"}}
`)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", "")
	startExecutor(t, bin, mc.Addr, "--id", "desc-1", "--types", "echo,sleep,fail")
	waitExecutors(t, bin, mc.Addr, 1)

	rows := typesJSON(t, bin, mc.Addr)
	assert.Equal(t, "sleep", rows["sleep"]["handler"])
	assert.Equal(t, "1", rows["sleep"]["version"])
	assert.Equal(t, []any{map[string]any{"name": "ms", "kind": "int", "required": true}}, rows["sleep"]["args"])
	out, errOut, code := cli(t, bin, mc.Addr, "types")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^sleep\s+0\s+0\s+no\s+1\s+1\s+1\s+-\n    handler sleep  args ms:int:required$`, out)
	assert.Contains(t, out, "    handler fail  args error:string,retryable:bool\n")

	// Validate (here sleep's schema) refuses the args: no retry.
	id := submitID(t, bin, mc.Addr, "--type", "sleep", "--arg", "ms=soon", "--max-attempts", "3")
	st := waitState(t, bin, mc.Addr, id, "failed")
	assert.Equal(t, 1.0, st["attempt"], "never retried: %v", st)
	assert.Equal(t, `invalid_args: arg ms: want int: "soon": invalid syntax`, st["error"])

	dryRun := func(addr, file string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"pipeline", "run", file, "--dry-run", "--addr", addr}, args...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return out.String(), errb.String(), ee.ExitCode()
		}
		require.NoError(t, err)
		return out.String(), errb.String(), 0
	}
	runIn := func(args ...string) (string, string, int) { return dryRun(mc.Addr, file, args...) }
	out, errOut, code = runIn()
	assert.Equal(t, 1, code, "%s%s", out, errOut)
	assert.Contains(t, out, "dry run: nothing submitted")
	assert.Contains(t, errOut, `error: step nap (sleep): arg ms: want int: "soon": invalid syntax`)
	assert.Contains(t, errOut, "warning: step boom (fail): arg extra: not in the handler's schema")
	assert.Contains(t, errOut, "dry run: 1 step args do not match what the executors describe")
	_, errOut, code = runIn("--json")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `arg ms: want int`)

	good := filepath.Join(dir, "good.yaml")
	require.NoError(t, os.WriteFile(good, []byte("name: g\nsteps:\n  - {id: nap, type: sleep, args: {ms: \"5\"}}\n"), 0o644))
	_, errOut, code = dryRun(mc.Addr, good)
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "args checked against the connected executors' descriptions")
	_, errOut, code = dryRun("127.0.0.1:1", file) // nothing listens there
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "args not checked against the executors: cannot reach the main control")
}

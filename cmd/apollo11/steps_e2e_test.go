package main_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
)

// Against the real binaries: an optional task that fails does not cancel
// its dependent, and a when=failed task runs only when a dependency
// failed; otherwise it ends skipped without reaching an executor.
func TestCLI_OptionalAndWhenFailed(t *testing.T) {
	bin := testbin.Build(t)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", t.TempDir())
	startExecutor(t, bin, mc.Addr, "--id", "steps-1", "--types", "echo,fail", "--slots", "2")
	ids := func(id uint64) string { return strconv.FormatUint(id, 10) }
	failing := []string{"--type", "fail", "--arg", "retryable=false", "--arg", "error=boom"}

	opt := submitID(t, bin, mc.Addr, append(failing, "--optional")...)
	out, errOut, code := cli(t, bin, mc.Addr, "submit", "--type", "echo", "--arg", "msg=after", "--depends-on", ids(opt), "--wait")
	require.Equal(t, 0, code, "the dependent of a failed optional task runs: %s%s", out, errOut)
	assert.Contains(t, out, "succeeded")
	st := waitState(t, bin, mc.Addr, opt, "failed")
	assert.Equal(t, true, st["optional"])
	out, _, _ = cli(t, bin, mc.Addr, "status", ids(opt))
	assert.Contains(t, out, "\noptional: its dependents run even if it fails\n")

	bad := submitID(t, bin, mc.Addr, failing...)
	out, errOut, code = cli(t, bin, mc.Addr, "submit", "--type", "echo", "--arg", "msg=cleanup",
		"--depends-on", ids(bad), "--when", "failed", "--wait")
	require.Equal(t, 0, code, "the on-failure task runs: %s%s", out, errOut)
	assert.Contains(t, out, "out.msg=cleanup\n")
	_, _, code = cli(t, bin, mc.Addr, "submit", "--type", "echo", "--depends-on", ids(bad), "--wait")
	assert.Equal(t, 3, code, "a plain dependent of the failure is cancelled")

	good := submitID(t, bin, mc.Addr, "--type", "echo")
	waitState(t, bin, mc.Addr, good, "succeeded")
	out, _, code = cli(t, bin, mc.Addr, "submit", "--type", "echo", "--depends-on", ids(good), "--when", "failed", "--wait")
	assert.Equal(t, 3, code, "skipped: it ends cancelled")
	assert.Contains(t, out, "error: skipped")
	pending := submitID(t, bin, mc.Addr, "--type", "echo", "--delay", "1h")
	skipped := submitID(t, bin, mc.Addr, "--type", "echo", "--depends-on", ids(pending), "--when", "failed")
	out, _, code = cli(t, bin, mc.Addr, "status", ids(skipped))
	require.Equal(t, 0, code)
	assert.Contains(t, out, "task "+ids(skipped)+" waiting\n")
	assert.Contains(t, out, "\nruns when a dependency failed\n")

	_, errOut, code = cli(t, bin, mc.Addr, "submit", "--type", "echo", "--when", "failed")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "When needs DependsOn")
}

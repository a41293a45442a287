package main_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/internal/testbin"
)

// scrape returns the /metrics text at addr.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// waitOutput waits until the process has logged want, count times.
func waitOutput(t *testing.T, p *testbin.Proc, want string, count int) {
	t.Helper()
	deadline := time.Now().Add(patience.Scale(10 * time.Second))
	for time.Now().Before(deadline) {
		if strings.Count(p.Output(), want) >= count {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %q (x%d) in the output:\n%s", want, count, p.Output())
}

// The real binary reads --policy-file at start, reloads it on SIGHUP
// (which no longer stops it), keeps the policies in force when the new
// file is bad, and reads the file again when restarted.
func TestPolicyFile_SIGHUPReload(t *testing.T) {
	bin := testbin.Build(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "policies.yaml")
	write := func(s string) { require.NoError(t, os.WriteFile(file, []byte(s), 0o644)) }
	write("types:\n  nobody:\n    max_attempts: 5\n    max_running: 2\n")
	httpAddr := testbin.FreeAddr(t)
	data := filepath.Join(dir, "data")
	args := []string{"--data-dir", data, "--policy-file", file, "--http-listen", httpAddr}
	mc := testbin.StartMaincontrol(t, bin, args...)
	attempts := func() any {
		t.Helper()
		id := submitID(t, bin, mc.Addr, "--type", "nobody")
		return waitState(t, bin, mc.Addr, id, "pending")["max_attempts"]
	}
	assert.EqualValues(t, 5, attempts(), "from the policy file")
	assert.Contains(t, scrape(t, httpAddr), `apollo11_policy_max_running{task_type="nobody"} 2`)

	write("types:\n  nobody:\n    max_attempts: 2\n")
	mc.Signal(syscall.SIGHUP)
	waitOutput(t, mc, "policies reloaded", 1)
	assert.False(t, mc.Exited(), "SIGHUP reloads: it does not stop\n%s", mc.Output())
	assert.EqualValues(t, 2, attempts(), "the reloaded file")
	metrics := scrape(t, httpAddr)
	assert.NotContains(t, metrics, "apollo11_policy_max_running{")
	assert.Contains(t, metrics, "apollo11_policy_loads_total 2")

	write("types:\n  nobody:\n    max_attempts: 2\n    retry: sometimes\n")
	mc.Signal(syscall.SIGHUP)
	waitOutput(t, mc, "policy file not reloaded: keeping the policies in force", 1)
	assert.Contains(t, mc.Output(), `retry \"sometimes\": want none, fixed or exponential`)
	assert.EqualValues(t, 2, attempts(), "a bad file changes nothing")
	metrics = scrape(t, httpAddr)
	assert.Contains(t, metrics, "apollo11_policy_reload_failures_total 1")
	assert.Contains(t, metrics, "apollo11_policy_reload_failing 1")
	out, errOut, code := cli(t, bin, mc.Addr, "stats", "--json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"stuck"`)

	// A restart reads the file again: a bad one stops the start.
	mc.Signal(syscall.SIGTERM)
	require.NoError(t, mc.Wait(20*time.Second), mc.Output())
	bad := testbin.Start(t, bin, nil, append([]string{"maincontrol", "--listen", mc.Addr}, args...)...)
	require.Error(t, bad.Wait(20*time.Second))
	assert.Contains(t, bad.Output(), "policy file "+file+`: task type "nobody": retry "sometimes"`)
	write("types:\n  nobody:\n    max_attempts: 4\n")
	mc = testbin.StartMaincontrolEnv(t, bin, nil, mc.Addr, args...)
	assert.EqualValues(t, 4, attempts(), "restart re-reads the file")
	mc.Signal(syscall.SIGTERM)
	require.NoError(t, mc.Wait(20*time.Second), mc.Output())
}

// A running task past its type's stuck_after is flagged, logged and, with
// stuck_action fail, taken back from the real executor and failed.
func TestPolicyFile_StuckTaskFails(t *testing.T) {
	bin := testbin.Build(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "policies.yaml")
	require.NoError(t, os.WriteFile(file, []byte("types:\n  sleep:\n    stuck_after: 1s\n    stuck_action: fail\n"), 0o644))
	httpAddr := testbin.FreeAddr(t)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", filepath.Join(dir, "data"), "--policy-file", file,
		"--http-listen", httpAddr, "--heartbeat-timeout", "30s")
	ex := startExecutor(t, bin, mc.Addr, "--id", "stuck-1", "--types", "sleep")
	id := submitID(t, bin, mc.Addr, "--type", "sleep", "--arg", "ms=60000")
	st := waitState(t, bin, mc.Addr, id, "failed")
	assert.Contains(t, st["error"], "stuck: running")
	waitOutput(t, mc, "task stuck: running past its type's limit", 1)
	waitOutput(t, ex, "cancel", 1)
	metrics := scrape(t, httpAddr)
	assert.Contains(t, metrics, "apollo11_tasks_stuck_total 1")
	assert.Contains(t, metrics, "apollo11_tasks_stuck_taken_back_total 1")
	assert.Contains(t, metrics, "apollo11_tasks_stuck 0")
	ex.Signal(syscall.SIGTERM)
	require.NoError(t, ex.Wait(20*time.Second), ex.Output())
	mc.Signal(syscall.SIGTERM)
	require.NoError(t, mc.Wait(20*time.Second), mc.Output())
}

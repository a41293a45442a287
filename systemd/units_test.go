package systemd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/stretchr/testify/require"
)

// TestUnits_Verify runs systemd-analyze verify on both unit files, with
// ExecStart pointed at a freshly built binary. Any warning fails the test:
// verify exits 0 on unknown keys, printing them. CI installs systemd.
func TestUnits_Verify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed (CI installs it: .ci/run)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "apollo11")
	build := exec.Command("go", "build", "-o", bin, "github.com/apollo11/apollo11/cmd/apollo11")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, unit := range []string{"apollo11-maincontrol.service", "apollo11-executor@.service"} {
		text, err := os.ReadFile(unit)
		require.NoError(t, err)
		require.Contains(t, string(text), "ExecStart=/usr/local/bin/apollo11 ")
		fixed := strings.ReplaceAll(string(text), "/usr/local/bin/apollo11", bin)
		require.NoError(t, os.WriteFile(filepath.Join(dir, unit), []byte(fixed), 0o644))
	}
	cmd := exec.Command(analyze, "verify", "apollo11-maincontrol.service", "apollo11-executor@test-1.service")
	cmd.Dir = dir
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Empty(t, strings.TrimSpace(string(out)), "systemd-analyze verify warned")
}

// TestUnits_Hardening pins the settings the operations guide promises.
func TestUnits_Hardening(t *testing.T) {
	main, err := os.ReadFile("apollo11-maincontrol.service")
	require.NoError(t, err)
	for _, want := range []string{"Type=notify", "WatchdogSec=", "StateDirectory=apollo11", "DynamicUser=yes",
		"NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
		"RestrictAddressFamilies=", "MemoryMax="} {
		require.Contains(t, string(main), want)
	}
	ex, err := os.ReadFile("apollo11-executor@.service")
	require.NoError(t, err)
	for _, want := range []string{"--id %i", "EnvironmentFile=", "NoNewPrivileges=yes", "ProtectSystem=strict",
		"KillMode=mixed"} { // contains what exec tasks leave (executor/builtin/doc.go)
		require.Contains(t, string(ex), want)
	}
}

// unitValue returns the value of key= in a unit file.
func unitValue(t *testing.T, unit []byte, key string) string {
	t.Helper()
	for _, line := range strings.Split(string(unit), "\n") {
		if v, ok := strings.CutPrefix(line, key+"="); ok {
			return v
		}
	}
	t.Fatalf("no %s= in the unit", key)
	return ""
}

// A crash is restarted, whatever its status; the main control's
// descriptor limit leaves room above --max-conns for its log,
// snapshots, listeners and HTTP port (at 65536 = --max-conns, connections
// alone could exhaust it); the executor's stop timeout covers its drain.
func TestUnits_Limits(t *testing.T) {
	main, err := os.ReadFile("apollo11-maincontrol.service")
	require.NoError(t, err)
	ex, err := os.ReadFile("apollo11-executor@.service")
	require.NoError(t, err)
	for _, unit := range [][]byte{main, ex} {
		// Exit 2 is also a Go panic, a fatal error and a watchdog's
		// SIGABRT: a unit that does not restart on it stays down.
		require.NotContains(t, string(unit), "\nRestartPreventExitStatus=")
		require.Equal(t, "on-failure", unitValue(t, unit, "Restart"))
	}
	nofile, err := strconv.Atoi(unitValue(t, main, "LimitNOFILE"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, nofile, 2*maincontrol.DefaultMaxConns)
	stop, err := time.ParseDuration(unitValue(t, ex, "TimeoutStopSec"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, stop, executor.DefaultDrainTimeout+5*time.Second)
	env, err := os.ReadFile("executor.env.example")
	require.NoError(t, err)
	drain, err := time.ParseDuration(unitValue(t, []byte(strings.ReplaceAll(string(env), "#APOLLO11_", "APOLLO11_")), "APOLLO11_DRAIN_TIMEOUT"))
	require.NoError(t, err)
	require.Less(t, drain, stop, "the env example's drain fits TimeoutStopSec")
}

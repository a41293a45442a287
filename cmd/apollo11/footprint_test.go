package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/internal/testbin"
)

// Idle RSS ceilings of the static, stripped build: the goals for small
// hosts. Measured values are in bench/README.md (Idle footprint).
const (
	maincontrolRSSCeiling = 8 << 20
	executorRSSCeiling    = 6 << 20
)

// An idle main control and an idle executor, both of the static build,
// settle under their RSS ceilings once startup is over.
func TestFootprint_IdleRSS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	bin := filepath.Join(t.TempDir(), "apollo11")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	mc := testbin.StartMaincontrolEnv(t, bin, nil, testbin.FreeAddr(t), "--data-dir", t.TempDir())
	ex := testbin.Start(t, bin, nil, "executor", "--connect", mc.Addr, "--id", "idle-1")
	require.Eventually(t, func() bool { return strings.Contains(ex.Output(), "msg=registered") || ex.Exited() },
		patience.Scale(30*time.Second), 20*time.Millisecond, ex.Output())
	require.False(t, ex.Exited(), ex.Output())

	const released = "released the pages of the binary that startup used"
	require.Eventually(t, func() bool { return strings.Contains(mc.Output(), released) && strings.Contains(ex.Output(), released) },
		patience.Scale(30*time.Second), 20*time.Millisecond, "%s\n%s", mc.Output(), ex.Output())
	mcRSS, exRSS := vmRSS(t, mc.Cmd.Process.Pid), vmRSS(t, ex.Cmd.Process.Pid)
	t.Logf("idle RSS: main control %d KiB, executor %d KiB", mcRSS>>10, exRSS>>10)
	require.LessOrEqual(t, mcRSS, maincontrolRSSCeiling, "main control idle RSS")
	require.LessOrEqual(t, exRSS, executorRSSCeiling, "executor idle RSS")
}

// vmRSS reads a process's resident set size in bytes.
func vmRSS(t *testing.T, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			require.NoError(t, err, line)
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

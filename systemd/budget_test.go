package systemd_test

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
)

// unitCaps are the settings of the unit that bound memory, as the budget
// reads them.
var unitCaps = map[string]func(c *maincontrol.Config, v int){
	"APOLLO11_MAX_PENDING":          func(c *maincontrol.Config, v int) { c.Core.MaxPending = v },
	"APOLLO11_MAX_PENDING_BYTES":    func(c *maincontrol.Config, v int) { c.Core.MaxPendingBytes = v },
	"APOLLO11_RETENTION_MAX":        func(c *maincontrol.Config, v int) { c.Core.RetentionMax = v },
	"APOLLO11_RETENTION_MAX_BYTES":  func(c *maincontrol.Config, v int) { c.Core.RetentionMaxBytes = v },
	"APOLLO11_MAX_STATE_BYTES":      func(c *maincontrol.Config, v int) { c.Core.MaxStateBytes = v },
	"APOLLO11_MAX_WAITS":            func(c *maincontrol.Config, v int) { c.Core.MaxWaits = v },
	"APOLLO11_MAX_PENDING_PER_CONN": func(c *maincontrol.Config, v int) { c.Core.MaxPendingPerConn = v },
	"APOLLO11_MAX_TASK_TYPES":       func(c *maincontrol.Config, v int) { c.Core.MaxTaskTypes = v },
	"APOLLO11_MAX_KEPT_EXECUTORS":   func(c *maincontrol.Config, v int) { c.Core.MaxKeptExecutors = v },
	"APOLLO11_MAX_CONNS":            func(c *maincontrol.Config, v int) { c.MaxConns = v },
	"APOLLO11_MAX_BUFFERS":          func(c *maincontrol.Config, v int) { c.MaxBuffers = v },
	"APOLLO11_MAX_FRAME":            func(c *maincontrol.Config, v int) { c.Core.MaxFrame = v },
}

// budgetSum adds up what peers can make the main control hold under cfg,
// logging each item.
func budgetSum(t *testing.T, cfg maincontrol.Config) int64 {
	t.Helper()
	items, err := maincontrol.MemoryBudget(cfg)
	require.NoError(t, err)
	var sum int64
	for _, it := range items {
		t.Logf("%8.1f MiB  %s", float64(it.Bytes)/(1<<20), it.What)
		sum += it.Bytes
	}
	t.Logf("%8.1f MiB  in all", float64(sum)/(1<<20))
	return sum
}

// The main control's caps keep what peers can make it hold under
// GOMEMLIMIT, and that under MemoryMax: past MemoryMax the kernel kills
// it, and a restart replays the same tasks, so a filling queue (or a
// hostile peer) would crash it in a loop instead of being answered
// queue_full. Every item of maincontrol.MemoryBudget counts: tasks and
// what they carry, the shared state, waits, task types, registrations,
// connections and their buffers.
func TestUnits_MemoryBudget(t *testing.T) {
	main, err := os.ReadFile("apollo11-maincontrol.service")
	require.NoError(t, err)
	var cfg maincontrol.Config
	env := map[string]string{}
	for _, line := range strings.Split(string(main), "\n") {
		kv, ok := strings.CutPrefix(line, "Environment=")
		if !ok {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
		if set, ok := unitCaps[k]; ok {
			n, err := strconv.Atoi(v)
			require.NoError(t, err, k)
			set(&cfg, n)
		} else {
			require.False(t, strings.HasPrefix(k, "APOLLO11_MAX_") || strings.HasSuffix(k, "_BYTES") ||
				strings.HasPrefix(k, "APOLLO11_RETENTION"), "the budget does not read %s: add it to unitCaps", k)
		}
	}
	live := budgetSum(t, cfg)

	limit, ok := strings.CutSuffix(env["GOMEMLIMIT"], "MiB")
	require.True(t, ok, "GOMEMLIMIT in MiB: %q", env["GOMEMLIMIT"])
	mib, err := strconv.ParseInt(limit, 10, 64)
	require.NoError(t, err)
	memLimit := mib << 20
	max, ok := strings.CutSuffix(unitValue(t, main, "MemoryMax"), "M")
	require.True(t, ok, "MemoryMax in M")
	maxMiB, err := strconv.ParseInt(max, 10, 64)
	require.NoError(t, err)

	require.Less(t, live, memLimit, "what the caps allow fits GOMEMLIMIT")
	require.LessOrEqual(t, memLimit, maxMiB<<20*7/8, "GOMEMLIMIT leaves MemoryMax room for stacks and the runtime")
	require.Contains(t, string(main), fmt.Sprintf("~%d MiB", (live+(1<<20)-1)>>20), "the unit's comment gives the sum")
}

// The binary's own defaults add up to less than the figure docs/operations.md's
// "Memory budget" gives, so that an operator can size a host from it.
func TestDefaults_MemoryBudget(t *testing.T) {
	sum := budgetSum(t, maincontrol.Config{})
	readme, err := os.ReadFile("../docs/operations.md")
	require.NoError(t, err)
	text := strings.Join(strings.Fields(string(readme)), " ")
	m := regexp.MustCompile(`with the defaults, at most ([0-9,]+) MiB`).FindStringSubmatch(text)
	require.NotNil(t, m, "docs/operations.md's Memory budget states the defaults' figure")
	stated, err := strconv.ParseInt(strings.ReplaceAll(string(m[1]), ",", ""), 10, 64)
	require.NoError(t, err)
	require.Less(t, sum, stated<<20, "the defaults fit the stated figure")
	require.Greater(t, sum, stated<<20*9/10, "the stated figure is not far above the sum")
}

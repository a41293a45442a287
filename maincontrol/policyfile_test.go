package maincontrol

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol/core"
)

func TestPolicyFile_Parse(t *testing.T) {
	ps, err := ParsePolicies([]byte(`
defaults:
  stuck_factor: 10
types:
  resize:
    timeout: 30s
    max_attempts: 5
    priority: 0
    retry: exponential
    retry_base: 2s
    retry_cap: 5m
    max_running: 10
    rate: 50
    stuck_after: 10m
    stuck_action: requeue
  once:
    retry: none
`))
	require.NoError(t, err)
	assert.Equal(t, core.Policy{StuckFactor: 10}, ps.Default)
	assert.Equal(t, core.Policy{Timeout: 30 * time.Second, MaxAttempts: 5, HasPriority: true,
		Retry: core.RetryExponential, RetryBase: 2 * time.Second, RetryCap: 5 * time.Minute,
		MaxRunning: 10, RatePerSec: 50, StuckAfter: 10 * time.Minute, StuckAction: core.StuckRequeue}, ps.Types["resize"])
	assert.Equal(t, core.Policy{Retry: core.RetryNone}, ps.Types["once"])

	empty, err := ParsePolicies(nil)
	require.NoError(t, err)
	assert.Empty(t, empty.Types, "an empty file: no policies")
}

// Every mistake is an error that names the type and the setting.
func TestPolicyFile_Refused(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"types:\n  x:\n    timeuot: 3s\n", "field timeuot not found"},
		{"types:\n  x:\n    timeout: 3\n", `task type "x": timeout "3": want a duration`},
		{"types:\n  x:\n    timeout: -3s\n", `timeout "-3s": want more than 0`},
		{"types:\n  x:\n    priority: 10\n", "priority 10: want 0 to 9"},
		{"types:\n  x:\n    max_attempts: 0\n", "max_attempts 0"},
		{"types:\n  x:\n    max_attempts: -1\n", "cannot unmarshal"},
		{"types:\n  x:\n    retry: linear\n", `retry "linear": want none, fixed or exponential`},
		{"types:\n  x:\n    retry: none\n    retry_base: 1s\n", "retry none takes no retry_base"},
		{"types:\n  x:\n    retry: none\n    max_attempts: 3\n", "retry none with max_attempts 3"},
		{"types:\n  x:\n    max_running: 0\n", "max_running 0: want 1 or more"},
		{"types:\n  x:\n    rate: 2000000\n", "rate 2000000"},
		{"types:\n  x:\n    stuck_factor: 0.5\n", "stuck_factor 0.5: want 1 or more"},
		{"types:\n  x:\n    stuck_action: kill\n", `stuck_action "kill"`},
		{"types:\n  x:\n    stuck_action: fail\n", "needs stuck_after or stuck_factor"},
		{"defaults:\n  retry_base: 1m\n  retry_cap: 1s\n  retry: exponential\n", "defaults: retry_cap 1s is below retry_base 1m0s"},
		{"types: [a, b]\n", "cannot unmarshal"},
		{"types: {}\n---\ntypes: {}\n", "more than one YAML document"},
		{"types:\n  x: {\n", "yaml:"},
	} {
		_, err := ParsePolicies([]byte(tc.yaml))
		require.Error(t, err, tc.yaml)
		assert.Contains(t, err.Error(), tc.want, tc.yaml)
	}
}

func TestPolicyFile_Load(t *testing.T) {
	dir := t.TempDir()
	_, err := LoadPolicyFile(filepath.Join(dir, "none.yaml"))
	assert.ErrorContains(t, err, "policy file: open")
	big := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(big, []byte("# "+strings.Repeat("x", maxPolicyFileBytes)+"\n"), 0o644))
	_, err = LoadPolicyFile(big)
	assert.ErrorContains(t, err, "larger than")
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("types:\n  x:\n    rate: 0\n"), 0o644))
	_, err = LoadPolicyFile(bad)
	assert.ErrorContains(t, err, "policy file "+bad+`: task type "x": rate 0`)
}

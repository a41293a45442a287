package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/internal/testbin"
)

// submit --wait follows its task across a restart of the main control on
// the same address, graceful or kill -9, with auth too: the client
// reconnects, takes the wait up again by task id and exits 0 with the
// result. It exited 4 (outcome unknown) although the task succeeded.
func TestCLI_SubmitWaitAcrossRestart(t *testing.T) {
	bin := testbin.Build(t)
	tok := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tok, []byte("restart-token\n"), 0o600))
	for _, tc := range []struct {
		name       string
		kill, auth bool
		key        string
	}{
		{name: "graceful"},
		{name: "kill-9", kill: true},
		{name: "kill-9 with auth", kill: true, auth: true},
		{name: "graceful with auth and key", auth: true, key: "restart-key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var authArgs []string
			if tc.auth {
				authArgs = []string{"--token-file", tok}
			}
			dir := t.TempDir()
			mcArgs := append([]string{"--data-dir", dir, "--log-level", "warn"}, authArgs...)
			mc := testbin.StartMaincontrol(t, bin, mcArgs...)
			startExecutor(t, bin, mc.Addr, append([]string{"--id", "restart-1", "--types", "sleep"}, authArgs...)...)

			subArgs := append([]string{"submit", "--addr", mc.Addr, "--type", "sleep", "--arg", "ms=1500",
				"--max-attempts", "5", "--wait", "--wait-timeout", "2m"}, authArgs...)
			if tc.key != "" {
				subArgs = append(subArgs, "--key", tc.key)
			}
			sub := testbin.Start(t, bin, nil, subArgs...)
			idRE := regexp.MustCompile(`task (\d+) submitted; waiting`)
			require.Eventually(t, func() bool { return idRE.MatchString(sub.Output()) },
				patience.Scale(20*time.Second), 10*time.Millisecond, "no submit: %s", sub.Output())
			id, err := strconv.ParseUint(idRE.FindStringSubmatch(sub.Output())[1], 10, 64)
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				out, _, code := cli(t, bin, mc.Addr, append([]string{"status", "--json", strconv.FormatUint(id, 10)}, authArgs...)...)
				var st struct{ State string }
				return code == 0 && json.Unmarshal([]byte(out), &st) == nil && st.State == "running"
			}, patience.Scale(20*time.Second), 10*time.Millisecond, "task %d never ran", id)

			if tc.kill {
				mc.Kill()
			} else {
				mc.Signal(syscall.SIGTERM)
				require.NoError(t, mc.Wait(patience.Scale(20*time.Second)), mc.Output())
			}
			require.False(t, sub.Exited(), "submit --wait ended with the main control: %s", sub.Output())
			mc2 := testbin.StartMaincontrolEnv(t, bin, nil, mc.Addr, mcArgs...)

			require.NoError(t, sub.Wait(patience.Scale(90*time.Second)), "submit --wait exits 0\n%s\nmain control:\n%s",
				sub.Output(), mc2.Output())
			assert.Contains(t, sub.Output(), fmt.Sprintf("task %d succeeded\n", id))
		})
	}
}

package maincontrol_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
)

// The newest snapshot is corrupt and the log lost its tail, ending before
// the previous snapshot. Falling back to that snapshot would lose every
// confirmed task after it and hand their ids out again, so a plain start
// refuses, naming the records; inspect says so; --recover-truncate starts
// with the tasks the older snapshot holds and skips every lost id.
func TestCrash_InvalidSnapshotLogEndsBeforePrevious(t *testing.T) {
	bin := testbin.Build(t)
	dir := t.TempDir()
	p := testbin.StartMaincontrol(t, bin, "--data-dir", dir, "--log-level", "warn",
		"--snapshot-every", "100", "--snapshot-interval", "1h")
	cl := clientPeer(t, p.Addr)
	const n = 250
	var saved []byte
	for i := 1; i <= n; i++ {
		id := cl.submit("s"+strconv.Itoa(i), "task_type", "t")
		require.Equal(t, uint64(i), id)
		if i == 50 { // the log as a lost tail would leave it
			segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
			require.NoError(t, err)
			require.Len(t, segs, 1)
			saved, err = os.ReadFile(segs[0])
			require.NoError(t, err)
		}
	}
	// A graceful stop snapshots every confirmed task.
	p.Signal(syscall.SIGTERM)
	require.NoError(t, p.Wait(20*time.Second), "%s", p.Output())
	snaps := snapshotsIn(t, dir)
	require.Len(t, snaps, 2)
	var prev, newest uint64
	_, err := fmt.Sscanf(filepath.Base(snaps[0]), "snapshot-%020d", &prev)
	require.NoError(t, err)
	_, err = fmt.Sscanf(filepath.Base(snaps[1]), "snapshot-%020d", &newest)
	require.NoError(t, err)
	require.Greater(t, prev, uint64(60), "the saved log ends before the previous snapshot")
	b, err := os.ReadFile(snaps[1])
	require.NoError(t, err)
	b[len(b)-1] ^= 0xff
	require.NoError(t, os.WriteFile(snaps[1], b, 0o600))
	segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err)
	require.Len(t, segs, 1)
	require.NoError(t, os.WriteFile(segs[0], saved, 0o600))

	missing := fmt.Sprintf("records %d..%d", prev+1, newest)
	refused := testbin.Start(t, bin, nil, "maincontrol", "--data-dir", dir, "--listen", freeAddr(t))
	require.Error(t, refused.Wait(20*time.Second), "confirmed records missing stop start-up\n%s", refused.Output())
	assert.Contains(t, refused.Output(), missing)
	assert.Contains(t, refused.Output(), "--recover-truncate starts anyway")

	out, err := exec.Command(bin, "inspect", "--data-dir", dir).Output()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	assert.Contains(t, string(out), "would NOT start")
	assert.Contains(t, string(out), missing)
	assert.Contains(t, string(out), fmt.Sprintf("with --recover-truncate it would start, losing up to %d confirmed records", newest-prev))

	p = testbin.StartMaincontrol(t, bin, "--data-dir", dir, "--log-level", "warn", "--recover-truncate")
	cl = clientPeer(t, p.Addr)
	assert.Equal(t, "pending", cl.stateOf(1), "what the previous snapshot holds is there")
	next := cl.submit("after", "task_type", "t")
	assert.Greater(t, next, uint64(n), "no id a confirmed submit got is handed out again")
	p.Kill()

	// The loss is not refused again; ids stay unique after a kill -9.
	p = testbin.StartMaincontrol(t, bin, "--data-dir", dir, "--log-level", "warn")
	cl = clientPeer(t, p.Addr)
	assert.Equal(t, "pending", cl.stateOf(next))
	assert.Greater(t, cl.submit("again", "task_type", "t"), next)
	p.Signal(syscall.SIGTERM)
	require.NoError(t, p.Wait(20*time.Second), "%s", p.Output())
}

package maincontrol_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
)

// logSize returns the log segments of dir, in write order, and their total
// size.
func logSize(t *testing.T, dir string) ([]string, int64) {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err)
	slices.Sort(segs)
	var total int64
	for _, s := range segs {
		fi, err := os.Stat(s)
		require.NoError(t, err)
		total += fi.Size()
	}
	return segs, total
}

// cutLog truncates the log of dir back to size bytes in all: what a power
// loss does to records written but never fsynced.
func cutLog(t *testing.T, dir string, size int64) {
	t.Helper()
	segs, total := logSize(t, dir)
	require.GreaterOrEqual(t, total, size)
	for i := len(segs) - 1; i >= 0 && total > size; i-- {
		fi, err := os.Stat(segs[i])
		require.NoError(t, err)
		keep := max(0, fi.Size()-(total-size))
		require.NoError(t, os.Truncate(segs[i], keep))
		total -= fi.Size() - keep
	}
}

// A dispatch lost in a crash, its task frame already with the executor:
// kill -9 of the real binary, run with --fsync never, and a power loss
// of what was written after the submit (cut off the log). After the
// restart the task is pending again and is dispatched under a version
// never handed out before; the executor's running= entry for the lost
// dispatch gets a cancel and its result is refused as stale, never
// accepted (spec section 7).
func TestCrash_LostDispatchVersionNotReused(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t)
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--fsync", "never", "--log-level", "warn"}
	p := testbin.StartMaincontrol(t, bin, args...)
	cl := clientPeer(t, p.Addr)
	id := cl.submit("a", "task_type", "t") // written, not fsynced: nothing is, past the epoch
	_, size := logSize(t, dir)
	ex := executorPeer(t, p.Addr, "e1", "t", 1)
	lost := ex.expectTask(id)
	p.Kill()
	cutLog(t, dir, size) // the registration and the dispatch are gone

	p = testbin.StartMaincontrol(t, bin, args...)
	ex = executorPeer(t, p.Addr, "e1", "t", 1)
	again := ex.expectTask(id)
	lostVer, err := strconv.ParseUint(lost.Value("version"), 10, 64)
	require.NoError(t, err)
	ver, err := strconv.ParseUint(again.Value("version"), 10, 64)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), lostVer)
	assert.Greater(t, ver, lostVer, "a version above every earlier one")
	assert.Equal(t, uint64(1)<<32|1, ver, "the second epoch's first")
	assert.Equal(t, lost.Value("attempt"), again.Value("attempt"), "the attempt it had")

	ex.send("heartbeat", "seq", "1", "running", again.Value("task_id")+"."+lost.Value("version"))
	ex.expect("pong")
	c := ex.expect("cancel")
	assert.Equal(t, lost.Value("version"), c.Value("version"))
	ex.start(lost)
	ack := ex.finish(lost, "status", "succeeded", "out.who", "lost")
	assert.Equal(t, "false", ack.Value("accepted"))
	assert.Equal(t, "stale", ack.Value("reason"))

	ex.start(again)
	assert.Equal(t, "true", ex.finish(again, "status", "succeeded", "out.who", "again").Value("accepted"))
	cl = clientPeer(t, p.Addr)
	st := cl.waitState(id, "succeeded", 5e9)
	assert.Equal(t, "again", st.Value("out.who"))
}

package maincontrol_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
)

// One flipped bit in an old log record that both snapshots hold: a plain
// start still refuses, naming the file and offset (spec section 7);
// --recover-truncate skips the damage and loses no confirmed task, and new
// tasks get the next ids, none skipped.
func TestCrash_RecoverTruncateSkipsWhatASnapshotHolds(t *testing.T) {
	bin := testbin.Build(t)
	dir := t.TempDir()
	p := testbin.StartMaincontrol(t, bin, "--data-dir", dir, "--log-level", "warn",
		"--snapshot-every", "20", "--snapshot-interval", "1h")
	cl := clientPeer(t, p.Addr)
	keys := map[uint64]string{}
	submit := func(cl *rawPeer, key string) uint64 {
		t.Helper()
		cl.send("submit", "req", key, "task_type", "t", "key", key)
		id, err := strconv.ParseUint(cl.expect("submitted").Value("task_id"), 10, 64)
		require.NoError(t, err)
		return id
	}
	for i := range 50 {
		key := "k" + strconv.Itoa(i)
		keys[submit(cl, key)] = key
	}
	// Two snapshots, then records that only the log holds.
	require.Eventually(t, func() bool { return len(snapshotsIn(t, dir)) == 2 }, 20*time.Second, 20*time.Millisecond)
	for i := 50; i < 58; i++ {
		key := "k" + strconv.Itoa(i)
		keys[submit(cl, key)] = key
	}
	p.Kill()

	snaps := snapshotsIn(t, dir)
	require.Len(t, snaps, 2)
	var snapLSN [2]uint64
	for i, s := range snaps {
		_, err := fmt.Sscanf(filepath.Base(s), "snapshot-%020d", &snapLSN[i])
		require.NoError(t, err)
	}
	require.Less(t, snapLSN[1], uint64(len(keys)), "some confirmed tasks are only in the log")
	seg := filepath.Join(dir, "00000000000000000001.log")
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	// Records start after the segment's file header.
	off := int64(16)
	for lsn := uint64(1); lsn < 5; lsn++ { // to record 5, which both snapshots hold
		require.Equal(t, lsn, binary.BigEndian.Uint64(b[off+8:]))
		off += 16 + int64(binary.BigEndian.Uint32(b[off:]))
	}
	require.Less(t, uint64(5), snapLSN[0])
	b[off+16+2] ^= 0x04
	require.NoError(t, os.WriteFile(seg, b, 0o600))

	// A plain start refuses, naming the file and the offset.
	refused := testbin.Start(t, bin, nil, "maincontrol", "--data-dir", dir, "--listen", freeAddr(t))
	require.Error(t, refused.Wait(20*time.Second), "a bad record mid-log stops start-up\n%s", refused.Output())
	assert.NotZero(t, refused.ExitCode())
	assert.Contains(t, refused.Output(), fmt.Sprintf("corrupt log segment 00000000000000000001.log at offset %d", off))
	assert.Contains(t, refused.Output(), "--recover-truncate starts anyway")

	// inspect says what the flag would do, and changes nothing.
	out, err := exec.Command(bin, "inspect", "--data-dir", dir).Output()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	assert.Contains(t, string(out), "would NOT start")
	assert.Contains(t, string(out), "with --recover-truncate it would start and lose no confirmed record")
	assert.Regexp(t, `--recover-truncate skips it: records before lsn \d+ dropped \(snapshot-\d+ holds them\); the log resumes at lsn \d+ in \d+\.log`, string(out))
	after, err := os.ReadFile(seg)
	require.NoError(t, err)
	require.Equal(t, b, after)

	// --recover-truncate: every confirmed task is there.
	ids := make([]uint64, 0, len(keys))
	for id := range keys {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	check := func(cl *rawPeer) {
		t.Helper()
		for _, id := range ids {
			cl.send("query", "req", "q", "task_id", strconv.FormatUint(id, 10))
			m := cl.recv()
			require.Equal(t, "task_state", m.Type(), "confirmed task %d lost: %s", id, m)
			assert.Equal(t, "pending", m.Value("state"), "task %d", id)
			assert.Equal(t, "t", m.Value("task_type"), "task %d", id)
		}
		for _, id := range ids[:3] { // keys are kept too
			cl.send("submit", "req", "dup", "task_type", "t", "key", keys[id])
			dup := cl.expect("submitted")
			assert.Equal(t, "true", dup.Value("duplicate"), "task %d", id)
			assert.Equal(t, strconv.FormatUint(id, 10), dup.Value("task_id"))
		}
	}
	p = testbin.StartMaincontrol(t, bin, "--data-dir", dir, "--log-level", "warn", "--recover-truncate")
	cl = clientPeer(t, p.Addr)
	check(cl)
	assert.Contains(t, p.Output(), "RecoverTruncate bridges it")
	assert.NotContains(t, p.Output(), "LOST")
	next := submit(cl, "new-1")
	assert.Equal(t, ids[len(ids)-1]+1, next, "the next id follows the old ones: nothing was lost, none skipped")
	ids = append(ids, next)
	keys[next] = "new-1"
	p.Kill()

	// And the dir is whole again: a plain start, after another kill -9.
	p = testbin.StartMaincontrol(t, bin, "--data-dir", dir, "--log-level", "warn")
	cl = clientPeer(t, p.Addr)
	check(cl)
	assert.Equal(t, next+1, submit(cl, "new-2"))
	p.Signal(syscall.SIGTERM)
	require.NoError(t, p.Wait(20*time.Second), "graceful stop exits 0\n%s", p.Output())
}

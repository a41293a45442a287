package maincontrol_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
)

// Deleting the lock file of a running main control (it looks stale after
// a kill -9) must not let a second one start on the same dir: both would
// hand out the same task ids and write over each other's records.
func TestDataDir_SecondMaincontrolRefusedAfterLockFileDeleted(t *testing.T) {
	bin := testbin.Build(t)
	dir := t.TempDir()
	first := testbin.StartMaincontrol(t, bin, "--data-dir", dir, "--log-level", "warn")
	require.NoError(t, os.Remove(filepath.Join(dir, "lock")))

	second := testbin.Start(t, bin, nil, "maincontrol", "--data-dir", dir, "--listen", freeAddr(t), "--log-level", "warn")
	err := second.Wait(20 * time.Second)
	require.Error(t, err, "a second main control runs on a dir already in use:\n%s", second.Output())
	require.True(t, second.Exited(), "a second main control runs on a dir already in use:\n%s", second.Output())
	assert.NotZero(t, second.ExitCode())
	assert.Contains(t, second.Output(), "data dir is in use by another process")

	cl := clientPeer(t, first.Addr)
	cl.send("submit", "req", "1", "task_type", "t")
	id := cl.expect("submitted").Value("task_id")
	assert.Equal(t, strconv.Itoa(1), id, "the first main control keeps the dir")
}

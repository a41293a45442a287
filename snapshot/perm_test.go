package snapshot_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The data dir the store creates, and every file in it (log segments,
// snapshots, the lock), are readable by the main control's user alone:
// they hold task arguments and outputs as given.
func TestStore_FilesPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	opts, _ := testOptions(dir)
	s, _ := MustStart(t, opts)
	appendN(t, s, 20)
	require.NoError(t, s.WriteSnapshot(20, fill("e1")))
	waitDurable(t, s, appendN(t, s, 5))
	require.NoError(t, s.Close())

	info, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o700), info.Mode().Perm(), "data dir")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(entries), 3, "a segment, a snapshot and the lock")
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		assert.Equal(t, fs.FileMode(0o600), info.Mode().Perm(), e.Name())
	}
}

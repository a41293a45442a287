package maincontrol_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
)

// A data dir every user may write to is refused at start, with the
// reason: anyone on the host could rewrite the log that the next start
// replays. It used to be taken without a word.
func TestDataDir_WorldWritableRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chmod(dir, 0o777))
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a start that got past the check stops at once
	err := maincontrol.Run(ctx, maincontrol.Config{DataDir: dir, Listen: freeAddr(t), Logger: testLogger()})
	require.ErrorIs(t, err, maincontrol.ErrConfig)
	assert.Contains(t, err.Error(), "is writable by every user (mode 0777)")
	assert.Contains(t, err.Error(), "chmod o-w")

	require.NoError(t, os.Chmod(dir, os.ModeSticky|0o777)) // the sticky bit does not stop new files
	require.Error(t, maincontrol.Run(ctx, maincontrol.Config{DataDir: dir, Listen: freeAddr(t), Logger: testLogger()}))

	require.NoError(t, os.Chmod(dir, 0o775))
	require.NoError(t, maincontrol.Run(ctx, maincontrol.Config{DataDir: dir, Listen: freeAddr(t), Logger: testLogger()}),
		"a dir its group may write to is the operator's choice")
}

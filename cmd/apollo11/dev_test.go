package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
)

// dev checks its own flags, and names them, before the main control
// starts: --executor-slots 0 said "--slots 0" (a flag dev does not have)
// after the main control had created the data dir and was listening.
func TestDev_FlagsCheckedBeforeStart(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--executor-slots", "0"}, "apollo11 dev: --executor-slots 0: want 1 to 65536\n"},
		{[]string{"--executor-slots", "-1"}, "--executor-slots -1: want 1 to 65536"},
		{[]string{"--executor-slots", "65537"}, "--executor-slots 65537: want 1 to 65536"},
		{[]string{"--listen", "127.0.0.1:0"}, `--listen "127.0.0.1:0": port "0" is not a number from 1 to 65535: dev's executors dial it`},
	} {
		dir := filepath.Join(t.TempDir(), "data")
		var out, errOut bytes.Buffer
		// A free port first: were a check missing, dev must not take 1969.
		args := append([]string{"dev", "--data-dir", dir, "--listen", testbin.FreeAddr(t)}, tc.args...)
		rc := run(args, &out, &errOut)
		assert.Equal(t, 2, rc, "%v: %s", tc.args, errOut.String())
		assert.Contains(t, errOut.String(), tc.err, "%v", tc.args)
		assert.NotContains(t, errOut.String(), "--slots", "%v", tc.args)
		assert.NotContains(t, errOut.String(), "main control ready", "%v: checked before the start", tc.args)
		_, err := os.Stat(dir)
		require.True(t, os.IsNotExist(err), "%v: the data dir was created: %v", tc.args, err)
	}
}

package core

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxGoFileLines is the house limit: a longer file is split by concern.
const maxGoFileLines = 500

// The core is where files grow most; this keeps each under the limit.
func TestCoreGoFilesWithinLineLimit(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		n := bytes.Count(b, []byte("\n"))
		assert.LessOrEqual(t, n, maxGoFileLines, "%s has %d lines: split it by concern", f, n)
	}
}

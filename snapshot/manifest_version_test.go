package snapshot

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeTestManifest writes a manifest of the given format version listing
// one part of the given kind, and returns its path.
func writeTestManifest(t *testing.T, version uint32, kind byte) string {
	t.Helper()
	const lsn = 10
	idx := &manifestIndex{rangeBits: 4, parts: []partRef{{kind: kind, lsn: lsn, size: 100, entries: 1}}}
	path := filepath.Join(t.TempDir(), snapName(lsn))
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	w := newSnapshotWriter(f, lsn, version)
	require.NoError(t, w.Add(idx.encode()))
	require.NoError(t, w.finish())
	return path
}

// Format 2 never had runs parts: one that lists one is corrupt.
func TestReadManifest_Format2RunsPartIsCorrupt(t *testing.T) {
	path := writeTestManifest(t, manifestV2, partRuns)
	_, _, _, _, err := readManifest(OS, path, 10, nil)
	require.ErrorIs(t, err, ErrBadSnapshot)
	assert.ErrorContains(t, err, filepath.Base(path)+": ")
	assert.ErrorContains(t, err, "format 2 lists runs part "+partName(10, partRuns))
}

// The same index is fine in format 3, and a tasks part is fine in format 2.
func TestReadManifest_RunsPartNeedsFormat3(t *testing.T) {
	for _, c := range []struct {
		version uint32
		kind    byte
	}{{manifestVersion, partRuns}, {manifestV2, partTasks}} {
		v, idx, _, _, err := readManifest(OS, writeTestManifest(t, c.version, c.kind), 10, nil)
		require.NoError(t, err)
		assert.Equal(t, c.version, v)
		require.Len(t, idx.parts, 1)
		assert.Equal(t, c.kind, idx.parts[0].kind)
	}
}

package builtin_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/executor/builtin"
)

// An allowed program that other users could replace is refused: one any
// user may write to, or in a directory any user may write to.
func TestCheckProgram(t *testing.T) {
	base := t.TempDir() // 0700, under a sticky /tmp
	prog := func(dir string, mode os.FileMode) string {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		p := filepath.Join(dir, "prog")
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"), 0o700))
		require.NoError(t, os.Chmod(p, mode))
		return p
	}
	chmod := func(p string, mode os.FileMode) string {
		require.NoError(t, os.Chmod(p, mode))
		return p
	}
	safe := prog(filepath.Join(base, "safe"), 0o755)
	require.NoError(t, builtin.CheckProgram(safe))
	require.NoError(t, builtin.CheckProgram("/bin/sh"))

	open := chmod(prog(filepath.Join(base, "open"), 0o755), 0o777)
	worldDir := prog(filepath.Join(base, "worlddir"), 0o755)
	chmod(filepath.Dir(worldDir), 0o777)
	stickyDir := prog(filepath.Join(base, "stickydir"), 0o755)
	chmod(filepath.Dir(stickyDir), os.ModeSticky|0o777)
	deep := prog(filepath.Join(base, "up", "down"), 0o755)
	chmod(filepath.Join(base, "up"), 0o777)
	stickyUp := prog(filepath.Join(base, "stickyup", "down"), 0o755)
	chmod(filepath.Join(base, "stickyup"), os.ModeSticky|0o777)
	link := filepath.Join(base, "safe", "link")
	require.NoError(t, os.Symlink(worldDir, link))

	require.NoError(t, builtin.CheckProgram(stickyUp), "a sticky directory on the way, as /tmp, keeps others from renaming")
	for _, tc := range []struct{ path, want string }{
		{open, "is writable by every user (mode 0777)"},
		{worldDir, "which every user may write to (mode 0777)"},
		{stickyDir, "which every user may write to (mode 0777)"},
		{deep, filepath.Join(base, "up") + ", which every user may write to"},
		{link, filepath.Dir(worldDir) + ", which every user may write to"},
	} {
		err := builtin.CheckProgram(tc.path)
		require.Error(t, err, tc.path)
		assert.Contains(t, err.Error(), tc.want)
	}
}

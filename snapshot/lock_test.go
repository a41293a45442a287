package snapshot

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Where the directory cannot be flocked (NFS: EBADF), the lock file alone
// keeps a second main control out, with a warning; any other failure to
// lock stops Open.
func TestLockDir_DirectoryLockRefused(t *testing.T) {
	cases := []struct {
		name  string
		errno syscall.Errno
		opens bool
	}{
		{"NFS", syscall.EBADF, true},
		{"no locks", syscall.ENOLCK, true},
		{"not supported", syscall.EOPNOTSUPP, true},
		{"I/O error", syscall.EIO, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			flockDir = func(*os.File, string) error { return fmt.Errorf("cannot lock: %w", tc.errno) }
			defer func() { flockDir = flock }()
			dir := t.TempDir()
			var logs bytes.Buffer
			l, err := lockDir(dir, slog.New(slog.NewTextHandler(&logs, nil)))
			if !tc.opens {
				require.Error(t, err)
				assert.ErrorIs(t, err, tc.errno)
				return
			}
			require.NoError(t, err)
			defer l.Close()
			assert.Contains(t, logs.String(), "cannot lock the data dir itself")
			_, err = lockDir(dir, slog.New(slog.DiscardHandler))
			assert.ErrorIs(t, err, ErrLocked, "the lock file still keeps a second one out")
		})
	}
}

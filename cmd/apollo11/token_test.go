package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The daemons warn at start-up about a token file its group can read and
// a short token (a 6-byte, 0644 token file was taken without a word; one
// that others can read is now refused: auth.LoadToken).
func TestDaemonFlags_TokenWarnings(t *testing.T) {
	dir := t.TempDir()
	weak := filepath.Join(dir, "weak")
	require.NoError(t, os.WriteFile(weak, []byte("short\n"), 0o640))
	require.NoError(t, os.Chmod(weak, 0o640))
	good := filepath.Join(dir, "good")
	require.NoError(t, os.WriteFile(good, []byte("0123456789abcdef0123\n"), 0o600))
	for _, tc := range []struct {
		file  string
		warns []string
	}{
		{weak, []string{"is accessible by group or others (mode 0640)", "is 5 bytes: use 16 or more"}},
		{good, nil},
	} {
		var mcErr bytes.Buffer
		var f maincontrolFlags
		fs := newFlagSet("maincontrol", "maincontrol", io.Discard)
		f.register(fs)
		require.NoError(t, parseFlags(fs, []string{"--token-file", tc.file}))
		_, err := f.config(&mcErr)
		require.NoError(t, err)

		var exErr bytes.Buffer
		var ef executorFlags
		fs = newFlagSet("executor", "executor", io.Discard)
		ef.register(fs)
		require.NoError(t, parseFlags(fs, []string{"--token-file", tc.file}))
		l, err := ef.log.logger(&exErr)
		require.NoError(t, err)
		_, err = ef.config(l)
		require.NoError(t, err)

		for _, out := range []string{mcErr.String(), exErr.String()} {
			if tc.warns == nil {
				assert.NotContains(t, out, "WARN", tc.file)
			}
			for _, w := range tc.warns {
				assert.Contains(t, out, "level=WARN", tc.file)
				assert.Contains(t, out, w, tc.file)
			}
			assert.NotContains(t, out, "short", "the token is never logged")
		}
	}
}

// Both daemons refuse, with the reason, a token file every user may read.
func TestDaemonFlags_TokenFileOpenToOthers(t *testing.T) {
	p := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(p, []byte("0123456789abcdef0123\n"), 0o600))
	require.NoError(t, os.Chmod(p, 0o644))
	_, err := maincontrolConfig(t, "--token-file", p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "readable or writable by every user")
	assert.Contains(t, err.Error(), "(mode 0644): chmod 600 it")

	var ef executorFlags
	fs := newFlagSet("executor", "executor", io.Discard)
	ef.register(fs)
	require.NoError(t, parseFlags(fs, []string{"--token-file", p}))
	l, err := ef.log.logger(io.Discard)
	require.NoError(t, err)
	_, err = ef.config(l)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "readable or writable by every user")
}

// The admin token file follows the token file's rules: a file every user
// may read is refused, and a client's bad file is named by its flag.
func TestAdminTokenFile_Rules(t *testing.T) {
	p := filepath.Join(t.TempDir(), "admin")
	require.NoError(t, os.WriteFile(p, []byte("0123456789abcdef-admin\n"), 0o600))
	require.NoError(t, os.Chmod(p, 0o644))
	_, err := maincontrolConfig(t, "--admin-token-file", p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--admin-token-file")
	assert.Contains(t, err.Error(), "readable or writable by every user")

	big := filepath.Join(t.TempDir(), "big")
	require.NoError(t, os.WriteFile(big, bytes.Repeat([]byte("a"), 5000), 0o600))
	var cf clientFlags
	fs := newFlagSet("stats", "stats", io.Discard)
	cf.register(fs)
	require.NoError(t, parseFlags(fs, []string{"--admin-token-file", big}))
	_, err = cf.dial()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--admin-token-file")
	assert.Contains(t, err.Error(), "larger than")
}

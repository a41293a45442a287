package tlsfiles_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/tlsfiles"
	"github.com/apollo11/apollo11/internal/tlsfiles/tlsfilestest"
)

// TestLoad_BadFilesAreErrors: bad files at start are errors that name the
// file, never a quiet fallback.
func TestLoad_BadFilesAreErrors(t *testing.T) {
	ca := tlsfilestest.NewCA(t, "ca")
	c, k := ca.Issue(tlsfilestest.Leaf{Name: "s"})
	junk := filepath.Join(t.TempDir(), "junk.pem")
	require.NoError(t, os.WriteFile(junk, []byte("junk"), 0o600))
	cases := []struct {
		name  string
		files tlsfiles.Files
		want  string
	}{
		{"cert without key", tlsfiles.Files{Cert: c}, "needs its key"},
		{"key without cert", tlsfiles.Files{Key: k}, "needs its key"},
		{"missing cert", tlsfiles.Files{Cert: c + ".gone", Key: k}, "no such file"},
		{"cert and key of different pairs", tlsfiles.Files{Cert: c, Key: ca.CAFile}, "certificate " + c},
		{"CA without PEM", tlsfiles.Files{CA: junk}, "holds no PEM certificate"},
		{"missing CA", tlsfiles.Files{CA: junk + ".gone"}, "no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tlsfiles.Load(tc.files, nil)
			require.ErrorIs(t, err, tlsfiles.ErrFiles)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := tlsfiles.Load(tlsfiles.Files{Cert: c, Key: k, CA: ca.CAFile}, nil)
	require.NoError(t, err)
}

// TestReload_FailureKeepsTheOldFiles: a reload that fails logs, returns
// the error and leaves the certificate in force.
func TestReload_FailureKeepsTheOldFiles(t *testing.T) {
	ca := tlsfilestest.NewCA(t, "ca")
	c, k := ca.Issue(tlsfilestest.Leaf{Name: "s"})
	var logs bytes.Buffer
	l, err := tlsfiles.Load(tlsfiles.Files{Cert: c, Key: k}, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	cfg, err := l.ServerConfig()
	require.NoError(t, err)
	before, err := cfg.GetConfigForClient(nil)
	require.NoError(t, err)

	require.NoError(t, os.WriteFile(c, []byte("broken"), 0o600))
	require.Error(t, l.Reload())
	assert.Contains(t, logs.String(), "TLS files not reloaded")
	after, err := cfg.GetConfigForClient(nil)
	require.NoError(t, err)
	assert.Equal(t, before.Certificates[0].Certificate, after.Certificates[0].Certificate)

	c2, k2 := ca.Issue(tlsfilestest.Leaf{Name: "s2"})
	tlsfilestest.Copy(t, c2, c)
	tlsfilestest.Copy(t, k2, k)
	require.NoError(t, l.Reload())
	after, err = cfg.GetConfigForClient(nil)
	require.NoError(t, err)
	assert.NotEqual(t, before.Certificates[0].Certificate, after.Certificates[0].Certificate)
}

// TestServerConfig_NeedsACertificate: a CA bundle alone serves nothing.
func TestServerConfig_NeedsACertificate(t *testing.T) {
	ca := tlsfilestest.NewCA(t, "ca")
	l, err := tlsfiles.Load(tlsfiles.Files{CA: ca.CAFile}, nil)
	require.NoError(t, err)
	_, err = l.ServerConfig()
	require.ErrorIs(t, err, tlsfiles.ErrFiles)
}

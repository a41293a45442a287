package auth_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/apollo11/apollo11/auth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadToken(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    string
		wantErr bool
	}{
		{"plain", "s3cret", "s3cret", false},
		{"trailing LF", "s3cret\n", "s3cret", false},
		{"trailing CRLF twice", "s3cret\r\n\r\n", "s3cret", false},
		{"inner newline kept", "a\nb\n", "a\nb", false},
		{"leading space kept", " x\n", " x", false},
		{"empty", "", "", true},
		{"only line endings", "\r\n\n", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "token")
			require.NoError(t, os.WriteFile(p, []byte(tc.content), 0o600))
			got, err := auth.LoadToken(p)
			if tc.wantErr {
				assert.ErrorIs(t, err, auth.ErrEmptyToken)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
		})
	}
	_, err := auth.LoadToken(filepath.Join(t.TempDir(), "missing"))
	assert.Error(t, err)
}

// A token file is read with a bound, and only a regular file: /dev/zero
// was read until memory ran out. A file any user may read or write is
// refused: the token admits whoever holds it.
func TestLoadToken_Refuses(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	require.NoError(t, os.WriteFile(big, bytes.Repeat([]byte("x"), 1<<20), 0o600))
	_, err := auth.LoadToken(big)
	require.Error(t, err, "a 1 MiB token file") // before /dev/zero: unbounded, it would fill memory
	assert.Contains(t, err.Error(), "larger than 4096 bytes")

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	for _, p := range []string{"/dev/zero", fifo, dir} {
		_, err := auth.LoadToken(p)
		require.Error(t, err, p)
		assert.Contains(t, err.Error(), "is not a regular file", p)
	}

	for _, tc := range []struct {
		mode  os.FileMode
		taken bool
	}{{0o600, true}, {0o400, true}, {0o640, true}, {0o660, true}, {0o644, false}, {0o604, false}, {0o602, false}, {0o666, false}} {
		p := filepath.Join(dir, "mode")
		require.NoError(t, os.WriteFile(p, []byte("0123456789abcdef\n"), 0o600))
		require.NoError(t, os.Chmod(p, tc.mode))
		tok, err := auth.LoadToken(p)
		if tc.taken {
			require.NoError(t, err, "mode %04o", tc.mode)
			assert.Equal(t, "0123456789abcdef", string(tok))
			continue
		}
		require.ErrorIs(t, err, auth.ErrTokenFileMode, "mode %04o", tc.mode)
		assert.Contains(t, err.Error(), "chmod 600")
		assert.NotContains(t, err.Error(), "0123456789abcdef", "the token is never in a message")
	}
}

func TestSign_KnownVector(t *testing.T) {
	// RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
	got := auth.Sign([]byte("Jefe"), "what do ya want for nothing?")
	assert.Equal(t, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", got)
}

func TestVerify(t *testing.T) {
	tok := []byte("token")
	nonce, err := auth.NewNonce()
	require.NoError(t, err)
	require.Len(t, nonce, 32)
	assert.Equal(t, strings.ToLower(nonce), nonce)
	good := auth.Sign(tok, nonce)
	assert.True(t, auth.Verify(tok, nonce, good))
	assert.False(t, auth.Verify(tok, nonce, strings.ToUpper(good)), "upper-case hex is not the exact value")
	assert.False(t, auth.Verify(tok, nonce, good[:63]))
	assert.False(t, auth.Verify(tok, nonce, ""))
	assert.False(t, auth.Verify([]byte("other"), nonce, good))
	other, err := auth.NewNonce()
	require.NoError(t, err)
	assert.NotEqual(t, nonce, other, "a new nonce on every call")
}

// A token file its group can read, or a short token, is taken (the daemon
// logs these warnings); a 0600 file with 16 bytes or more gets none.
func TestTokenFileWarnings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  os.FileMode
		token string
		warns []string
	}{
		{"private and long", 0o600, "0123456789abcdef", nil},
		{"owner read-only", 0o400, "0123456789abcdef0123", nil},
		{"group-readable", 0o640, "0123456789abcdef", []string{"is accessible by group or others (mode 0640): chmod 600 it"}},
		{"short", 0o600, "short", []string{"is 5 bytes: use 16 or more random bytes"}},
		{"both", 0o660, "short", []string{"(mode 0660)", "is 5 bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "token")
			require.NoError(t, os.WriteFile(p, []byte(tc.token+"\n"), 0o600))
			require.NoError(t, os.Chmod(p, tc.mode))
			tok, err := auth.LoadToken(p)
			require.NoError(t, err)
			got := auth.TokenFileWarnings(p, tok)
			require.Len(t, got, len(tc.warns), "%q", got)
			for i, w := range tc.warns {
				assert.Contains(t, got[i], w)
				assert.NotContains(t, got[i], tc.token+" ", "the token is never in a message")
			}
		})
	}
}

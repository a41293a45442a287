package auth_test

import (
	"os"
	"path/filepath"
	"strings"
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

// A token file others can read, or a short token, is taken (the daemon
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
		{"world-readable", 0o644, "0123456789abcdef", []string{"is accessible by group or others (mode 0644): chmod 600 it"}},
		{"group-readable", 0o640, "0123456789abcdef", []string{"(mode 0640)"}},
		{"short", 0o600, "short", []string{"is 5 bytes: use 16 or more random bytes"}},
		{"both", 0o604, "short", []string{"(mode 0604)", "is 5 bytes"}},
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

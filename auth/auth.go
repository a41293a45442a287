// Package auth implements the shared-token handshake of wire-v1 section 3:
// the main control sends a fresh nonce in `welcome`, and the peer's first
// frame carries HMAC-SHA256(token, nonce) as lower-case hex. The token
// itself never crosses the wire.
package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
)

// ErrEmptyToken is returned for a token file that holds nothing but line
// endings; the spec makes that a startup error.
var ErrEmptyToken = errors.New("token is empty")

// NonceLen is the number of random bytes in a nonce (32 hex characters).
const NonceLen = 16

// MACLen is the length of a signature in hex characters.
const MACLen = 2 * sha256.Size

// LoadToken reads a token file: its content with all trailing CR and LF
// bytes removed. An empty token is an error.
func LoadToken(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read token file: %w", err)
	}
	tok := bytes.TrimRight(b, "\r\n")
	if len(tok) == 0 {
		return nil, fmt.Errorf("token file %s: %w", path, ErrEmptyToken)
	}
	return tok, nil
}

// MinTokenLen is the shortest token TokenFileWarnings takes without a
// warning: 16 bytes (a random 32-byte token, base64, is 44).
const MinTokenLen = 16

// TokenFileWarnings returns what is weak about a token file that
// LoadToken read as tok, for the daemon to log at start-up: a file that
// users other than its owner can read (the token is the one secret of
// the system; ssh refuses such key files), and a token shorter than
// MinTokenLen. It reads only the file's mode, never the token into a
// message.
func TokenFileWarnings(path string, tok []byte) []string {
	var warns []string
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		warns = append(warns, fmt.Sprintf("token file %s is accessible by group or others (mode %04o): chmod 600 it", path, st.Mode().Perm()))
	}
	if len(tok) < MinTokenLen {
		warns = append(warns, fmt.Sprintf("token in %s is %d bytes: use %d or more random bytes (head -c 32 /dev/urandom | base64)", path, len(tok), MinTokenLen))
	}
	return warns
}

// NewNonce returns 16 random bytes as 32 lower-case hex characters.
func NewNonce() (string, error) {
	var b [NonceLen]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("cannot read random nonce: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Sign returns HMAC-SHA256(token, nonce) as 64 lower-case hex characters;
// the message is the nonce exactly as sent (its ASCII hex characters).
func Sign(token []byte, nonce string) string {
	mac := hmac.New(sha256.New, token)
	mac.Write([]byte(nonce))
	return hex.EncodeToString(mac.Sum(nil))
}

// Verify reports whether got is exactly the lower-case hex signature of
// nonce. The comparison is constant-time; upper-case hex is refused.
func Verify(token []byte, nonce, got string) bool {
	want := Sign(token, nonce)
	return hmac.Equal([]byte(want), []byte(got))
}

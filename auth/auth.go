// Package auth implements the shared-token handshake of wire-v1 section 3.
// The main control sends a fresh nonce in `welcome`. The peer's first
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
	"io"
	"os"
	"runtime"
	"syscall"
)

// ErrEmptyToken is returned for a token file that holds only line endings.
// The spec makes that a startup error.
var ErrEmptyToken = errors.New("token is empty")

// NonceLen is the number of random bytes in a nonce (32 hex characters).
const NonceLen = 16

// MACLen is the length of a signature in hex characters.
const MACLen = 2 * sha256.Size

// MaxTokenFileBytes bounds what LoadToken reads. A token is one short line.
// A path such as /dev/zero must not fill memory.
const MaxTokenFileBytes = 4096

// LoadToken returns a token file's content without its trailing CR and LF
// bytes. It refuses an empty token and a file that is not a regular file.
// It refuses a file larger than MaxTokenFileBytes. It also refuses a file
// that users other than its owner and group may read or write
// (see checkTokenMode).
func LoadToken(path string) ([]byte, error) {
	// Non-blocking, so that a FIFO named by mistake is refused, not waited on.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot read token file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot read token file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("token file %s is not a regular file (%s): give a file holding the token", path, st.Mode().Type())
	}
	if err := checkTokenMode(path, st.Mode()); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxTokenFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read token file: %w", err)
	}
	if len(b) > MaxTokenFileBytes {
		return nil, fmt.Errorf("token file %s is larger than %d bytes: a token is one short line", path, MaxTokenFileBytes)
	}
	tok := bytes.TrimRight(b, "\r\n")
	if len(tok) == 0 {
		return nil, fmt.Errorf("token file %s: %w", path, ErrEmptyToken)
	}
	return tok, nil
}

// ErrTokenFileMode is returned for a token file any user may read or write.
// The token is the one secret that admits peers. With it, anyone on the
// host could act as a client or an executor, or change the token.
var ErrTokenFileMode = errors.New("token file is readable or writable by every user")

// checkTokenMode refuses a token file open to others. Windows has no
// such mode bits. Go reports every file there as 0666 or 0444.
func checkTokenMode(path string, mode os.FileMode) error {
	if runtime.GOOS == "windows" || mode.Perm()&0o006 == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s (mode %04o): chmod 600 it", ErrTokenFileMode, path, mode.Perm())
}

// MinTokenLen is the shortest token TokenFileWarnings takes without a
// warning. It is 16 bytes. A random 32-byte token in base64 is 44.
const MinTokenLen = 16

// TokenFileWarnings returns what is weak about a token file that
// LoadToken read as tok. The daemon logs them at start-up. One is a file
// that its group can read or write. LoadToken already refuses others.
// Another is a token shorter than MinTokenLen. It reads only the file's
// mode and never puts the token into a message.
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

// Sign returns HMAC-SHA256(token, nonce) as 64 lower-case hex characters.
// The MAC covers the nonce exactly as sent, as its ASCII hex characters.
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

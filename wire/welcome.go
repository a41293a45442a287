package wire

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"syscall"
)

// Welcome is what a peer takes from the main control's first frame
// (spec section 3).
type Welcome struct {
	Auth     string // "none" or "hmac-sha256"; "" when absent
	Nonce    string
	Proto    string // "" when absent
	MaxFrame int    // the limit for frames the peer sends; int32 at most
	// Features are the optional groups the server speaks (section 8.1).
	// A v1 server lists none, so they are nil.
	Features []string
}

// ParseWelcome checks that m is a welcome and reads it. max_frame defaults
// to DefaultMaxFrame. 0 or a value beyond uint32 is an error. A value
// beyond int32 is capped, so it fits an int on 32-bit platforms.
func ParseWelcome(m *Message) (Welcome, error) {
	if m.Type() == "error" {
		// A main control that refuses the connection (at --max-conns, or
		// stopping) says why; keep its code.
		return Welcome{}, fmt.Errorf("refused before welcome: %w", ErrorReplyOf(m))
	}
	if m.Type() != "welcome" {
		return Welcome{}, fmt.Errorf("expected welcome, got %q (is this an apollo11 main control?)", m.Type())
	}
	maxFrame, err := m.UintOr("max_frame", DefaultMaxFrame)
	if err != nil || maxFrame == 0 || maxFrame > math.MaxUint32 {
		return Welcome{}, fmt.Errorf("bad welcome max_frame %q", m.Value("max_frame"))
	}
	// A features list that breaks the list syntax names no group the
	// peer can use. A v1.1 peer ignores it rather than refuse the server.
	features, _ := m.List("features")
	if features == nil && m.Has("features") {
		features = []string{} // a v1.1 server that speaks no group
	}
	for i, f := range features {
		features[i] = strings.Clone(f)
	}
	return Welcome{Auth: m.Value("auth"), Nonce: m.Value("nonce"), Proto: m.Value("proto"),
		MaxFrame: int(min(maxFrame, math.MaxInt32)), Features: features}, nil
}

// ForeignBanner reports whether err, from reading a connection's first
// frame, shows a peer of another protocol. A header of four printable ASCII
// bytes ("SSH-", "HTTP", "220 ") is a text banner, not a length. Such a
// peer could not read an error frame, so it gets none. Any other frame that
// cannot be decoded gets one.
func ForeignBanner(err error) bool {
	var tl *FrameTooLargeError
	if !errors.As(err, &tl) {
		return false
	}
	for shift := 24; shift >= 0; shift -= 8 {
		if c := byte(tl.Size >> shift); c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// WelcomeReadError describes a failure to read the first frame. A framing
// error there usually means the address is some other service (an SSH
// banner announces a frame of 1.4 GB), so it says so.
func WelcomeReadError(err error) error {
	if errors.Is(err, ErrFrameTooLarge) || errors.Is(err, ErrMalformed) {
		return fmt.Errorf("cannot read welcome (is this an apollo11 main control?): %w", err)
	}
	return fmt.Errorf("cannot read welcome: %w", err)
}

// NoWelcomeHint is added to a plaintext peer's error when no welcome came.
// A TLS port says nothing until it gets a TLS hello, then closes.
const NoWelcomeHint = "the main control may require TLS: try --tls-ca"

// NoWelcome reports whether err, from a plaintext connection's first
// read, is the silence then close of a TLS port: EOF, a reset or a
// timeout, rather than a frame that could not be read.
func NoWelcome(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, os.ErrDeadlineExceeded)
}

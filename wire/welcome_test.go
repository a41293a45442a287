package wire

import (
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseWelcome(t *testing.T) {
	for _, tc := range []struct {
		name string
		kv   []string
		typ  string
		want Welcome
		err  string
	}{
		{name: "full", kv: []string{"proto", "1", "nonce", "ab", "auth", "hmac-sha256", "max_frame", "2048"},
			want: Welcome{Auth: "hmac-sha256", Nonce: "ab", Proto: "1", MaxFrame: 2048}},
		{name: "default max_frame", kv: []string{"auth", "none"}, want: Welcome{Auth: "none", MaxFrame: DefaultMaxFrame}},
		{name: "capped to int32", kv: []string{"max_frame", "4294967295"}, want: Welcome{MaxFrame: 1<<31 - 1}},
		{name: "features", kv: []string{"features", "admin,types,later"},
			want: Welcome{MaxFrame: DefaultMaxFrame, Features: []string{"admin", "types", "later"}}},
		{name: "no features", kv: []string{"features", ""}, want: Welcome{MaxFrame: DefaultMaxFrame, Features: []string{}}},
		{name: "bad features: none usable", kv: []string{"features", "a,,b"}, want: Welcome{MaxFrame: DefaultMaxFrame, Features: []string{}}},
		{name: "zero", kv: []string{"max_frame", "0"}, err: `bad welcome max_frame "0"`},
		{name: "beyond uint32", kv: []string{"max_frame", "4294967296"}, err: `bad welcome max_frame "4294967296"`},
		{name: "not a number", kv: []string{"max_frame", "x"}, err: `bad welcome max_frame "x"`},
		{name: "other type", typ: "pong", err: `expected welcome, got "pong" (is this an apollo11 main control?)`},
		{name: "refused", typ: "error", kv: []string{"code", "unavailable", "message", "stopping"},
			err: "refused before welcome: main control error unavailable: stopping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ := tc.typ
			if typ == "" {
				typ = "welcome"
			}
			m := NewMessage(Kind(typ))
			for i := 0; i+1 < len(tc.kv); i += 2 {
				m.Set(tc.kv[i], tc.kv[i+1])
			}
			w, err := ParseWelcome(m)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, w)
		})
	}
}

func TestWelcomeReadError(t *testing.T) {
	tooBig := &FrameTooLargeError{Size: 1397966893, Max: DefaultMaxFrame}
	err := WelcomeReadError(tooBig)
	assert.EqualError(t, err, "cannot read welcome (is this an apollo11 main control?): frame too large: 1397966893 bytes announced, max 1048576")
	assert.True(t, errors.Is(err, ErrFrameTooLarge))
	assert.EqualError(t, WelcomeReadError(malformed("no =", 3)), "cannot read welcome (is this an apollo11 main control?): malformed payload at byte 3: no =")
	err = WelcomeReadError(io.EOF)
	assert.EqualError(t, err, "cannot read welcome: EOF")
	assert.True(t, errors.Is(err, io.EOF))
}

func TestForeignBanner(t *testing.T) {
	size := func(b string) uint32 { return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) }
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"ssh", &FrameTooLargeError{Size: size("SSH-"), Max: DefaultMaxFrame}, true},
		{"http", WelcomeReadError(&FrameTooLargeError{Size: size("HTTP"), Max: DefaultMaxFrame}), true},
		{"smtp", &FrameTooLargeError{Size: size("220 "), Max: DefaultMaxFrame}, true},
		{"a frame just too large", &FrameTooLargeError{Size: 2_000_000, Max: DefaultMaxFrame}, false},
		{"the largest length", &FrameTooLargeError{Size: 0xffffffff, Max: DefaultMaxFrame}, false},
		{"a half-printable length", &FrameTooLargeError{Size: 0x7fffffff, Max: DefaultMaxFrame}, false},
		{"malformed", malformed("no =", 3), false},
		{"eof", io.EOF, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ForeignBanner(tc.err))
		})
	}
}

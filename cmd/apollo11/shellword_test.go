package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A hint printed for copying must survive a POSIX shell as one word: an
// IPv6 address's brackets are a glob (zsh: "no matches found").
func TestShellWord(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:1969":     "127.0.0.1:1969",
		"/etc/apollo11/tok":  "/etc/apollo11/tok",
		"[::1]:1969":         "'[::1]:1969'",
		"a b":                "'a b'",
		"it's":               `'it'\''s'`,
		"":                   "''",
		"host:1969;rm -rf /": "'host:1969;rm -rf /'",
	} {
		assert.Equal(t, want, shellWord(in), in)
	}
}

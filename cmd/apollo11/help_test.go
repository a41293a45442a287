package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

// state takes keys: `state extra` asks for the key "extra" only, and
// prints just the state_version when it is not set. The help says so,
// where it used to say only "show the shared state".
func TestHelp_StateKeys(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 0, run([]string{"help"}, &out, &errOut))
	assert.Contains(t, out.String(), "  state        show the shared state: every key, or the KEYs given\n")
	out.Reset()
	assert.Equal(t, 0, run([]string{"state", "--help"}, &out, &errOut))
	assert.Contains(t, out.String()+errOut.String(), "Usage: apollo11 state [flags] [KEY ...]  (no KEY: every key; a KEY not set is left out)\n")
}

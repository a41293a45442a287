package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Each command with subcommands answers help, none and an unknown one alike.
func TestRunSubcommands(t *testing.T) {
	for _, cmd := range []string{"pipeline", "schedule"} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run([]string{cmd}, &out, &errOut), cmd)
		assert.Contains(t, errOut.String(), "Usage", cmd)

		out.Reset()
		errOut.Reset()
		assert.Equal(t, 0, run([]string{cmd, "help"}, &out, &errOut), cmd)
		assert.Contains(t, out.String(), "Usage", cmd)

		out.Reset()
		errOut.Reset()
		assert.Equal(t, 2, run([]string{cmd, "nope"}, &out, &errOut), cmd)
		assert.Contains(t, errOut.String(), "unknown "+cmd+` command "nope" (`, cmd)
	}
}

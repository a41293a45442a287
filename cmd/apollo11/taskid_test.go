package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A task id given on the command line is refused by the rule (a whole
// number from 1), in the same words wherever it is given: `status -1`
// said "flag provided but not defined: -1", `list --after -5` "parse
// error", and `status 0` asked the main control for a task that cannot
// exist.
func TestCommandLine_TaskIDs(t *testing.T) {
	const rule = "(a task id is a whole number from 1)"
	tests := []struct {
		args []string
		msg  string // "": accepted (then the dial fails: exit 1)
	}{
		{[]string{"status", "-1"}, `"-1" is not a task id ` + rule},
		{[]string{"status", "--json", "-1"}, `{"error":{"code":"usage","message":"\"-1\" is not a task id ` + rule}, // JSON under --json
		{[]string{"status", "0"}, `"0" is not a task id ` + rule},
		{[]string{"status", "abc"}, `"abc" is not a task id ` + rule},
		{[]string{"status", "-1x"}, "flag provided but not defined: -1x"},
		{[]string{"status", "--", "-1"}, `"-1" is not a task id ` + rule},
		{[]string{"cancel", "-7"}, `"-7" is not a task id ` + rule},
		{[]string{"stats", "-1"}, `unexpected argument "-1"`},
		{[]string{"list", "--state", "failed", "--after", "-5"},
			`invalid value "-5" for flag -after: want a task id, or 0 for the first page ` + rule},
		{[]string{"list", "--state", "failed", "--after=x"}, `invalid value "x" for flag -after: want a task id, or 0 for the first page`},
		{[]string{"list", "--state", "failed", "--after", "0"}, ""},
		{[]string{"list", "--state", "failed", "--after", "12"}, ""},
		{[]string{"status", "12"}, ""},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			// --addr first: after "--" it would be an operand.
			args := append([]string{tc.args[0], "--addr", "127.0.0.1:1"}, tc.args[1:]...)
			var out, errOut bytes.Buffer
			rc := run(args, &out, &errOut)
			if tc.msg == "" {
				assert.Equal(t, 1, rc, errOut.String())
				assert.Contains(t, errOut.String(), "cannot reach", "accepted, then dialled")
				return
			}
			assert.Equal(t, 2, rc, errOut.String())
			assert.Contains(t, errOut.String(), tc.msg)
		})
	}
	var out, errOut bytes.Buffer
	require.Equal(t, 2, run([]string{"inspect", "--data-dir", t.TempDir(), "-3"}, &out, &errOut))
	assert.Contains(t, errOut.String(), `"-3" is not a task id `+rule)
}

package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --depends-on takes the wire's list syntax strictly: what the main
// control would refuse is refused before anything is sent, not quietly
// rewritten (an empty item dropped, a leading zero read as a number).
func TestIDsFlag(t *testing.T) {
	tests := []struct {
		in   []string
		want []uint64
		bad  string
	}{
		{in: []string{"1"}, want: []uint64{1}},
		{in: []string{"1,22,333"}, want: []uint64{1, 22, 333}},
		{in: []string{"1", "2,3"}, want: []uint64{1, 2, 3}}, // repeated: appended
		{in: []string{"1,,2"}, bad: `"" is not a task id`},
		{in: []string{"1,"}, bad: `"" is not a task id`},
		{in: []string{","}, bad: `"" is not a task id`},
		{in: []string{""}, bad: `"" is not a task id`},
		{in: []string{"01"}, bad: `"01" is not a task id`},
		{in: []string{"0"}, bad: `"0" is not a task id`},
		{in: []string{"1, 2"}, bad: `" 2" is not a task id`},
		{in: []string{"-1"}, bad: `"-1" is not a task id`},
		{in: []string{"99999999999999999999"}, bad: "is not a task id"},
	}
	for _, tc := range tests {
		var f idsFlag
		var err error
		for _, s := range tc.in {
			if err = f.Set(s); err != nil {
				break
			}
		}
		if tc.bad != "" {
			require.Error(t, err, "%q", tc.in)
			assert.Contains(t, err.Error(), tc.bad)
			continue
		}
		require.NoError(t, err, "%q", tc.in)
		assert.Equal(t, tc.want, []uint64(f), "%q", tc.in)
	}
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"submit", "--type", "echo", "--depends-on", "1,,2"}, &out, &errOut),
		"a bad list is a bad command line")
	assert.Contains(t, errOut.String(), `"" is not a task id`)
}

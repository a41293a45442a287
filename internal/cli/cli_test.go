package cli

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseOperands(t *testing.T) {
	p := &Program{Name: "prog", EnvPrefix: "CLITEST_"}
	for _, tc := range []struct {
		args     []string
		n        int
		operands []string
		err      string
	}{
		{args: []string{"7", "--n", "3", "8"}, n: 3, operands: []string{"7", "8"}},
		{args: []string{"-1", "--v", "-2"}, operands: []string{"-1", "-2"}},
		{args: []string{"--n", "-5", "x"}, n: -5, operands: []string{"x"}},
		{args: []string{"--n=-5", "-6"}, n: -5, operands: []string{"-6"}},
		{args: []string{"a", "--", "--n", "4"}, operands: []string{"a", "--n", "4"}},
		{args: []string{"-x"}, err: "flag provided but not defined: -x"},
		{args: []string{"--n", "q"}, err: `invalid value "q" for flag -n`},
	} {
		fs := p.NewFlagSet("sub", "sub [flags]", io.Discard)
		n := fs.Int("n", 0, "")
		fs.Bool("v", false, "")
		err := p.ParseOperands(fs, tc.args)
		if tc.err != "" {
			var ee ExitError
			require.True(t, errors.As(err, &ee), "%v: %v", tc.args, err)
			assert.Equal(t, 2, ee.Code)
			assert.Contains(t, ee.Err.Error(), tc.err)
			assert.Equal(t, "Run prog sub --help for its flags.", ee.Hint)
			continue
		}
		require.NoError(t, err, "%v", tc.args)
		assert.Equal(t, tc.n, *n, "%v", tc.args)
		assert.Equal(t, tc.operands, append([]string{}, fs.Args()...), "%v", tc.args)
	}
}

// A variable sets a flag the command line did not give.
// The error of a bad one names it.
// --help prints every flag with its variable.
func TestEnvAndHelp(t *testing.T) {
	p := &Program{Name: "prog", EnvPrefix: "CLITEST_"}
	t.Setenv("CLITEST_MAX_N", "9")
	t.Setenv("CLITEST_ON", "maybe")
	var out bytes.Buffer
	fs := p.NewFlagSet("sub", "sub [flags]", &out)
	n := fs.Int("max-n", 1, "the most")
	require.NoError(t, p.Parse(fs, nil))
	assert.Equal(t, 9, *n)
	assert.Equal(t, "max 9 is too many (--max-n is set by CLITEST_MAX_N in the environment)",
		p.NameEnvSources("max 9 is too many", func(f string) string { return "max" }))

	fs = p.NewFlagSet("sub", "sub [flags]", &out)
	fs.Bool("on", false, "")
	assert.ErrorContains(t, p.Parse(fs, nil), `environment CLITEST_ON="maybe": want true or false`)

	fs = p.NewFlagSet("sub", "sub [flags]", &out)
	fs.Int("max-n", 1, "the most")
	assert.ErrorIs(t, p.Parse(fs, []string{"--help"}), flag.ErrHelp)
	assert.Equal(t, "Usage: prog sub [flags]\n\nFlags (each also from its environment variable):\n  --max-n  [CLITEST_MAX_N]\n      the most (default 1)\n", out.String())
}

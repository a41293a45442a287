package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFlags_Operands(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		operands bool
		err      string
		json     string
		rest     []string
	}{
		{name: "flags only", args: []string{"--progress=false", "--json", "f"}, json: "f"},
		{name: "bool flag given a separate value", args: []string{"--progress", "false", "--json", "f"},
			err: `unexpected argument "false": flags come first, and a boolean flag takes its value as --flag=false`},
		{name: "stray word", args: []string{"stray"}, err: `unexpected argument "stray"`},
		{name: "operands allowed", args: []string{"--json", "f", "42", "43"}, operands: true, json: "f", rest: []string{"42", "43"}},
		{name: "bad flag", args: []string{"--nope"}, err: "flag provided but not defined: -nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFlagSet("t", "t", io.Discard)
			var progress autoBool
			fs.Var(&progress, "progress", "")
			jsonOut := fs.String("json", "", "")
			parse := parseFlags
			if tc.operands {
				parse = parseFlagsOperands
			}
			err := parse(fs, tc.args)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.json, *jsonOut)
			assert.Equal(t, len(tc.rest), fs.NArg())
			if tc.rest != nil {
				assert.Equal(t, tc.rest, fs.Args())
			}
		})
	}
}

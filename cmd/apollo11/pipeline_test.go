package main

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pipeline run takes its FILE among its flags, before or after them.
func TestPipelineRun_FileAmongFlags(t *testing.T) {
	const file = "../../docs/examples/nightly.yaml"
	for _, args := range [][]string{
		{"pipeline", "run", file, "--dry-run", "--var", "date=d1"},
		{"pipeline", "run", "--dry-run", file, "--var", "date=d1"},
		{"pipeline", "run", "--dry-run", "--var", "date=d1", file},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 0, run(args, &out, &errOut), "%v: %s", args, errOut.String())
		assert.Contains(t, out.String(), "key=nightly-d1/fetch", "%v", args)
	}
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"pipeline", "run", "--dry-run"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "want one pipeline FILE, got 0")
}

// pipeline status finds and reads its run file before it dials: with no
// main control up, "cannot reach" used to hide that there was no run to
// show (0 or 2 *.run.json files here, or a --run-file that is missing).
func TestPipelineStatus_RunFileBeforeDial(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		args  []string
		code  int
		msg   string
	}{
		{name: "no run file here", code: 2, msg: "give --run-file (found 0 *.run.json files here)"},
		{name: "two run files here", files: []string{"a.run.json", "b.run.json"}, code: 2,
			msg: "give --run-file (found 2 *.run.json files here)"},
		{name: "missing --run-file", args: []string{"--run-file", "gone.run.json"}, code: 1, msg: "gone.run.json: no such file"},
		{name: "not a run file", files: []string{"bad.run.json"}, code: 1, msg: "bad.run.json: invalid character"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			for _, f := range tc.files {
				require.NoError(t, os.WriteFile(f, []byte("not json"), 0o644))
			}
			var out, errOut bytes.Buffer
			args := append([]string{"pipeline", "status", "--addr", "127.0.0.1:1"}, tc.args...) // nothing listens there
			assert.Equal(t, tc.code, run(args, &out, &errOut), errOut.String())
			assert.Contains(t, errOut.String(), tc.msg)
			assert.NotContains(t, errOut.String(), "cannot reach", "checked before dialling")
		})
	}
}

// A --var the file does not know is a bad command line (exit 2) that
// names it and the file's variables: --var data=... for date ran the
// file with date's default.
func TestPipelineRun_UnknownVar(t *testing.T) {
	const file = "../../docs/examples/nightly.yaml"
	var out, errOut bytes.Buffer
	rc := run([]string{"pipeline", "run", file, "--dry-run", "--var", "data=d1"}, &out, &errOut)
	assert.Equal(t, 2, rc, errOut.String())
	assert.Contains(t, errOut.String(), "unknown --var data: the file neither declares it in vars nor uses ${data} (its variables: date)")
	assert.NotContains(t, out.String(), "dry run", "nothing planned")
}

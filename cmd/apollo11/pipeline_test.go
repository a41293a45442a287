package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
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

package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The daemon binary runs on small hosts: it links neither the benchmark
// harness nor an image encoder.
func TestDaemon_DoesNotImportBench(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, pkg := range strings.Fields(string(out)) {
		assert.NotEqual(t, "github.com/apollo11/apollo11/bench", pkg, "cmd/apollo11 imports bench")
		assert.NotEqual(t, "image/png", pkg, "cmd/apollo11 imports image/png")
	}
}

// `apollo11 bench ...` names the command that took its place, with the
// same arguments, and exits 2.
func TestBench_PointsToItsCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"bench", "wire", "--rate", "5"}, &out, &errOut))
	assert.Empty(t, out.String())
	assert.Contains(t, errOut.String(), "apollo11-bench wire --rate 5\n")
	assert.Contains(t, errOut.String(), "go run ./cmd/apollo11-bench")
}

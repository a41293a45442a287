package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestClient_DoesNotPullPipelineOrYAML keeps the client lean for its users.
// Pipeline files are parsed by the pipeline package, which imports client.
func TestClient_DoesNotPullPipelineOrYAML(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to list the dependencies")
	}
	out, err := exec.Command(goBin, "list", "-deps", "github.com/apollo11/apollo11/client").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/apollo11/apollo11/pipeline" || strings.Contains(dep, "yaml") {
			t.Errorf("client depends on %s: client users would compile it", dep)
		}
	}
}

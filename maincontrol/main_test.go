package maincontrol_test

import (
	"os"
	"testing"

	"github.com/apollo11/apollo11/internal/testbin"
)

// TestMain removes the binary the process tests build (testbin.Main).
// As a child of BenchmarkRestore it restores a data dir and exits.
func TestMain(m *testing.M) {
	if restoreChild() {
		return
	}
	os.Exit(testbin.Main(m))
}

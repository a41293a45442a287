package main

import (
	"os"
	"path/filepath"
	"strings"
)

// selfCommand is how the commands dev suggests should start this binary.
// When go run built it, as in the quick start, that is `go run
// ./cmd/apollo11`. Otherwise it is the name it was started by. So an
// installed apollo11 does not suggest a go run that needs the source tree.
func selfCommand() string {
	return selfCommandFor(os.Args[0], os.TempDir())
}

func selfCommandFor(arg0, tmp string) string {
	// go run builds into a go-build directory under the temp dir (or
	// GOTMPDIR) or the build cache, and names the binary after the package.
	if strings.Contains(filepath.ToSlash(arg0), "/go-build") || strings.HasPrefix(arg0, tmp+string(filepath.Separator)+"go-build") {
		return "go run ./cmd/apollo11"
	}
	return arg0
}

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// dev suggests go run only when go run started it: an installed binary
// suggests itself.
func TestSelfCommandFor(t *testing.T) {
	for arg0, want := range map[string]string{
		"/tmp/go-build123456/b001/exe/apollo11":        "go run ./cmd/apollo11",
		"/root/.cache/go-build/42/420e6dcf-d/apollo11": "go run ./cmd/apollo11",
		"/usr/local/bin/apollo11":                      "/usr/local/bin/apollo11",
		"apollo11":                                     "apollo11",
		"./apollo11":                                   "./apollo11",
	} {
		assert.Equal(t, want, selfCommandFor(arg0, "/tmp"), arg0)
	}
}

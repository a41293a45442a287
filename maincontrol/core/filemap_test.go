package core

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every file the package doc's file map names exists, so a rename or a
// removal cannot leave the map pointing nowhere.
func TestDoc_FileMapNamesRealFiles(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	names := regexp.MustCompile(`\b[a-z_]+\.go\b`).FindAllString(string(doc), -1)
	require.Greater(t, len(names), 30, "no file map in doc.go")
	for _, n := range names {
		_, err := os.Stat(n)
		assert.NoError(t, err, "doc.go names %s", n)
	}
}

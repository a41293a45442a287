package maincontrol_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Recovery has one sequence, Restore: neither the server nor the apollo11
// command replays a store into a core or ends a recovery itself. Before,
// the server and apollo11 inspect each ran their own.
func TestRestore_IsTheOnlyRecoverySequence(t *testing.T) {
	steps := map[string]bool{"LoadEntry": true, "LoadTask": true, "DropTask": true, "ReplayRecord": true,
		"CheckFrames": true, "Recovered": true, "BeginEpoch": true, "SkipIDs": true, "LoadBatch": true}
	var found []string
	walk := func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "core" {
				return filepath.SkipDir // the core calls its own steps
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && steps[sel.Sel.Name] {
				found = append(found, filepath.ToSlash(path)+": "+sel.Sel.Name)
			}
			return true
		})
		return nil
	}
	require.NoError(t, filepath.WalkDir(".", walk))
	require.NoError(t, filepath.WalkDir("../cmd/apollo11", walk))
	require.NotEmpty(t, found, "the walk found no recovery step at all")
	for _, f := range found {
		assert.True(t, strings.HasPrefix(f, "recover.go: "), "a recovery step outside Restore: %s", f)
	}
}

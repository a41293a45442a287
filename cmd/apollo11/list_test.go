package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
)

// list's "more:" hint reaches the same main control: it keeps --addr and
// --token-file, and running it as printed gets the next page.
func TestCLI_ListHintKeepsTarget(t *testing.T) {
	bin := testbin.Build(t)
	tok := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tok, []byte("s3cret-token\n"), 0o600))
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", "", "--token-file", tok)
	for range 3 {
		submitID(t, bin, mc.Addr, "--type", "nobody-serves-this", "--token-file", tok)
	}
	out, errOut, code := cli(t, bin, mc.Addr, "list", "--token-file", tok, "--state", "pending", "--limit", "2")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "1\n2\n", out)
	hint, ok := strings.CutPrefix(strings.TrimSpace(errOut), "more: ")
	require.True(t, ok, errOut)
	assert.Equal(t, "apollo11 list --addr "+mc.Addr+" --token-file "+tok+" --state pending --limit 2 --after 2", hint)

	words := strings.Fields(hint) // no quoting needed for these values
	next, err := exec.Command(bin, words[1:]...).Output()
	require.NoError(t, err)
	assert.Equal(t, "3\n", string(next))
}

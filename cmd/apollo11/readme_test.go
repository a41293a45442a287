package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var updateReadme = flag.Bool("update", false, "rewrite the flag tables of docs/configuration.md from the code")

// documented lists the commands whose flags docs/configuration.md documents, as the
// argument lists that print their help.
var documented = [][]string{
	{"maincontrol"}, {"executor"}, {"dev"}, {"submit"}, {"status"}, {"cancel"}, {"requeue"}, {"purge"}, {"list"},
	{"stats"}, {"state"}, {"debug"}, {"inspect"}, {"backup"}, {"pipeline", "run", "x.yaml"}, {"pipeline", "status"},
	{"pause"}, {"resume"}, {"state-set"}, {"state-del"}, {"types"},
	{"schedule", "add"}, {"schedule", "list"}, {"schedule", "pause"},
	{"cluster", "status"}, {"cluster", "add"}, {"cluster", "remove"},
}

var helpFlag = regexp.MustCompile(`^  --(\S+)  \[(\S+)\]$`)

// flagTable renders a command's flags, from its --help, as a markdown table.
func flagTable(t *testing.T, args []string) string {
	var out, errb bytes.Buffer
	rc := run(append(slices.Clone(args), "--help"), &out, &errb)
	require.Equal(t, 0, rc, "%v --help: %s", args, errb.String())
	lines := strings.Split(errb.String()+out.String(), "\n")
	var b strings.Builder
	b.WriteString("| flag | environment | default | meaning |\n|---|---|---|---|\n")
	n := 0
	for i := 0; i < len(lines); i++ {
		m := helpFlag.FindStringSubmatch(lines[i])
		if m == nil || i+1 >= len(lines) {
			continue
		}
		usage := strings.TrimSpace(lines[i+1])
		def := ""
		if j := strings.LastIndex(usage, " (default "); j >= 0 && strings.HasSuffix(usage, ")") {
			def, usage = usage[j+len(" (default "):len(usage)-1], usage[:j]
		}
		usage = strings.ReplaceAll(usage, "|", `\|`)
		fmt.Fprintf(&b, "| `--%s` | `%s` | %s | %s |\n", m[1], m[2], code(def), usage)
		n++
	}
	require.NotZero(t, n, "no flags parsed from %v --help", args)
	return b.String()
}

func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + s + "`"
}

// TestReadme_FlagReference keeps docs/configuration.md's configuration reference equal
// to the flags the code defines. Run with -update to rewrite it.
func TestReadme_FlagReference(t *testing.T) {
	path := "../../docs/configuration.md"
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	readme := string(b)
	for _, args := range documented {
		name := strings.Join(args, " ")
		name = strings.TrimSuffix(name, " x.yaml")
		start := "<!-- flags: " + name + " -->\n"
		end := "<!-- /flags -->"
		i := strings.Index(readme, start)
		require.GreaterOrEqual(t, i, 0, "docs/configuration.md has no %q section", start)
		j := strings.Index(readme[i:], end)
		require.Greater(t, j, 0)
		want := flagTable(t, args)
		got := readme[i+len(start) : i+j]
		if *updateReadme {
			readme = readme[:i+len(start)] + want + readme[i+j:]
			continue
		}
		require.Equal(t, want, got, "docs/configuration.md flags of %q are out of date: go test ./cmd/apollo11 -run Readme -update", name)
	}
	for name := range commands {
		if name == "version" {
			continue
		}
		require.Contains(t, readme, "<!-- flags: "+name, "docs/configuration.md does not document command %q", name)
	}
	if *updateReadme {
		require.NoError(t, os.WriteFile(path, []byte(readme), 0o644))
	}
}

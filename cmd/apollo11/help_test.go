package main

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// state takes keys: `state extra` asks for the key "extra" only, and
// prints just the state_version when it is not set. The help says so,
// where it used to say only "show the shared state".
func TestHelp_StateKeys(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 0, run([]string{"help"}, &out, &errOut))
	assert.Contains(t, out.String(), "  state        show the shared state: every key, or the KEYs given\n")
	out.Reset()
	assert.Equal(t, 0, run([]string{"state", "--help"}, &out, &errOut))
	assert.Contains(t, out.String()+errOut.String(), "Usage: apollo11 state [flags] [KEY ...]  (no KEY: every key; a KEY not set is left out)\n")
}

// helpInvocations are the argument lists that print each command's help
// with a --help added: every command and pipeline's two.
func helpInvocations() [][]string {
	invs := [][]string{{"pipeline"}, {"pipeline", "run"}, {"pipeline", "status"}}
	for _, name := range slices.Sorted(maps.Keys(commands)) {
		if name != "pipeline" {
			invs = append(invs, []string{name})
		}
	}
	return invs
}

// A --help asked for is printed on stdout and exits 0, for every command
// as for `apollo11 --help`: `submit --help` printed on stderr, so that
// `apollo11 submit --help | less` showed nothing.
func TestHelp_OnStdout(t *testing.T) {
	for _, inv := range helpInvocations() {
		for _, help := range []string{"--help", "-h", "-help"} {
			args := append(slices.Clone(inv), help)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				var out, errOut bytes.Buffer
				require.Equal(t, 0, run(args, &out, &errOut), errOut.String())
				assert.True(t, strings.HasPrefix(out.String(), "Usage: apollo11 "+inv[0]), out.String())
				assert.Empty(t, errOut.String())
			})
		}
	}
}

// Each flag's help shows one default: `schedule add --help` showed
// "(default: the type's policy, else 3) (default 0)" for --max-attempts.
func TestHelp_OneDefaultPerFlag(t *testing.T) {
	invs := append(helpInvocations(), []string{"schedule", "add"}, []string{"pipeline", "resume"})
	for _, inv := range invs {
		var out, errOut bytes.Buffer
		require.Equal(t, 0, run(append(slices.Clone(inv), "--help"), &out, &errOut), errOut.String())
		for line := range strings.Lines(out.String()) {
			assert.LessOrEqual(t, strings.Count(line, "(default"), 1, "%v: %s", inv, line)
		}
	}
}

// A bad command line prints its error, and where the flags are listed, on
// stderr: not the whole usage (33 lines for list) before the one line
// that matters. It still exits 2.
func TestCommandLineErrors_OneLineAndHint(t *testing.T) {
	tests := []struct {
		args []string
		msg  string
		help string // the command whose --help is pointed at
	}{
		{[]string{"status", "--nope"}, "apollo11 status: flag provided but not defined: -nope", "status"},
		{[]string{"submit", "--type", "x", "--priority", "high"}, `invalid value "high" for flag -priority`, "submit"},
		{[]string{"stats", "--request-timeout", "10"}, "want a duration with a unit, like 15s", "stats"},
		{[]string{"list", "--state", "failed", "--limit", "1001"}, "apollo11 list: --limit 1001: want 1 to 1000", "list"},
		{[]string{"list"}, "apollo11 list: --state is required", "list"},
		{[]string{"pipeline", "run", "--wait"}, "apollo11 pipeline: want one pipeline FILE, got 0", "pipeline run"},
		{[]string{"pipeline", "status", "--json=maybe"}, "invalid boolean value", "pipeline status"},
		{[]string{"dev", "--executor-slots", "x"}, `invalid value "x" for flag -executor-slots`, "dev"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			assert.Equal(t, 2, run(append(tc.args, "--addr", "127.0.0.1:1"), &out, &errOut))
			assert.Empty(t, out.String())
			lines := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n")
			require.Len(t, lines, 2, errOut.String())
			assert.Contains(t, lines[0], tc.msg)
			assert.Equal(t, "Run apollo11 "+tc.help+" --help for its flags.", lines[1])
		})
	}
	// The note naming the variable that set a bad value belongs to the
	// error's line, the pointer to --help after it.
	t.Setenv("APOLLO11_STATE", "bogus")
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"list"}, &out, &errOut))
	assert.Equal(t, `apollo11 list: --state "bogus": want one of `+strings.Join(taskStates, ", ")+
		" (--state is set by APOLLO11_STATE in the environment)\nRun apollo11 list --help for its flags.\n", errOut.String())
}

// `help CMD` prints CMD's help, as `CMD --help` does (it printed the
// command list), and --version is the version command (it was an
// unknown command).
func TestRun_HelpCommandAndVersionFlag(t *testing.T) {
	runOut := func(args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		rc := run(args, &out, &errOut)
		return out.String(), errOut.String(), rc
	}
	tests := []struct {
		args []string
		same []string // prints what these print
	}{
		{[]string{"help", "submit"}, []string{"submit", "--help"}},
		{[]string{"help", "pipeline"}, []string{"pipeline", "--help"}},
		{[]string{"help", "pipeline", "run"}, []string{"pipeline", "run", "--help"}},
		{[]string{"help", "version"}, []string{"version", "--help"}},
		{[]string{"help"}, []string{"--help"}},
		{[]string{"--version"}, []string{"version"}},
		{[]string{"-version"}, []string{"version"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, rc := runOut(tc.args...)
			wantOut, _, wantRC := runOut(tc.same...)
			require.Equal(t, 0, wantRC)
			assert.Equal(t, wantRC, rc, errOut)
			assert.Equal(t, wantOut, out)
			if len(tc.args) > 1 {
				assert.NotContains(t, out, "Commands:", "not the command list")
			}
		})
	}
	out, errOut, rc := runOut("help", "bogus")
	assert.Equal(t, 2, rc)
	assert.Empty(t, out)
	assert.Contains(t, errOut, `apollo11: unknown command "bogus"`)
	out, _, rc = runOut("--version")
	assert.Equal(t, 0, rc)
	assert.Equal(t, "apollo11 dev\n", out)
}

package main

import (
	"bytes"
	"flag"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/envgen"
	"github.com/apollo11/apollo11/internal/testbin"
)

// TestMain removes the binaries the process tests build (testbin.Main).
func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

var updateReadme = flag.Bool("update", false, "rewrite the harness's flag table in docs/configuration.md from the code")

func TestSetHarnessProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range []struct {
		n, want int
		err     string
	}{
		{n: 1, want: 1},
		{n: 3, want: 3},
		{n: 0, want: 2}, // Go's default: left as it was
		{n: -1, want: 2, err: "--procs -1: want 0 (Go's default) or more"},
	} {
		runtime.GOMAXPROCS(2)
		err := setHarnessProcs(tc.n)
		if tc.err != "" {
			require.EqualError(t, err, tc.err)
		} else {
			require.NoError(t, err)
		}
		assert.Equal(t, tc.want, runtime.GOMAXPROCS(0), "--procs %d", tc.n)
	}
}

// A bad value is a bad command line (exit 2), checked before anything
// starts or is dialled.
func TestLoad_BadCommandLines(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--rate", "abc"}, `--rate "abc": want tasks per second`},
		{nil, "give a task count or a duration"},
		{[]string{"--tasks", "10", "--fsync", "bogus"}, `fsync "bogus"`},
		{[]string{"--tasks", "10", "--plot", "x.jpg"}, "--plot x.jpg: want a .svg"},
		{[]string{"--tasks", "10", "--pid", "2147483646"}, "--pid 2147483646: no such process"},
		{[]string{"--tasks", "10", "--pid", "-3"}, "--pid -3: want a process id"},
		{[]string{"wire", "--rate", "x"}, `invalid value "x" for flag -rate`},
		{[]string{"nosuch"}, `unknown scenario "nosuch"`},
	} {
		var out, errOut bytes.Buffer
		args := append(tc.args, "--progress=false", "--addr", "127.0.0.1:1")
		assert.Equal(t, 2, run(args, &out, &errOut), "%v: %s", tc.args, errOut.String())
		assert.Contains(t, errOut.String(), tc.msg, "%v", tc.args)
	}
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"wire", "--rate", "x"}, &out, &errOut))
	assert.Equal(t, "apollo11-bench wire: invalid value \"x\" for flag -rate: parse error\nRun apollo11-bench wire --help for its flags.\n",
		errOut.String())
}

// `help S`, `S --help` and the old `bench S --help` print the same help
// on stdout and exit 0.
func TestHelp_Scenarios(t *testing.T) {
	help := func(args ...string) string {
		var out, errOut bytes.Buffer
		require.Equal(t, 0, run(args, &out, &errOut), "%v: %s", args, errOut.String())
		return out.String()
	}
	for name := range scenarios {
		want := help(name, "--help")
		assert.Contains(t, want, "Usage: apollo11-bench "+name+" ")
		assert.NotContains(t, want, name+" "+name, "the name once")
		assert.Equal(t, want, help("help", name))
		assert.Equal(t, want, help("bench", name, "--help"))
	}
	assert.Contains(t, help("--help"), "Usage: apollo11-bench [wire|")
}

var helpFlag = regexp.MustCompile(`^  --(\S+)  \[(\S+)\]$`)

// TestReadme_FlagReference keeps docs/configuration.md's table of the load's flags
// equal to the code's. Run with -update to rewrite it.
func TestReadme_FlagReference(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"--help"}, &out, &errOut), errOut.String())
	lines := strings.Split(out.String(), "\n")
	var b strings.Builder
	b.WriteString("| flag | environment | default | meaning |\n|---|---|---|---|\n")
	for i := 0; i+1 < len(lines); i++ {
		m := helpFlag.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		usage, def := strings.TrimSpace(lines[i+1]), ""
		if j := strings.LastIndex(usage, " (default "); j >= 0 && strings.HasSuffix(usage, ")") {
			def, usage = "`"+usage[j+len(" (default "):len(usage)-1]+"`", usage[:j]
		}
		b.WriteString("| `--" + m[1] + "` | `" + m[2] + "` | " + def + " | " + strings.ReplaceAll(usage, "|", `\|`) + " |\n")
	}
	path := "../../docs/configuration.md"
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	readme := string(raw)
	start, end := "<!-- flags: apollo11-bench -->\n", "<!-- /flags -->"
	i := strings.Index(readme, start)
	require.GreaterOrEqual(t, i, 0, "docs/configuration.md has no %q section", start)
	j := strings.Index(readme[i:], end)
	require.Greater(t, j, 0)
	if *updateReadme {
		readme = readme[:i+len(start)] + b.String() + readme[i+j:]
		require.NoError(t, os.WriteFile(path, []byte(readme), 0o644))
		return
	}
	require.Equal(t, b.String(), readme[i+len(start):i+j], "docs/configuration.md's apollo11-bench flags are out of date: go test ./cmd/apollo11-bench -run Readme -update")
}

// A misspelt APOLLO11_BENCH_* variable is warned about, with the name
// it was likely meant to be; a known one is not.
func TestWarnUnknownEnv(t *testing.T) {
	t.Setenv("APOLLO11_BENCH_RAET", "5")
	t.Setenv("APOLLO11_BENCH_HOLD", "1s") // idle's
	var out, errOut bytes.Buffer
	run([]string{"wire", "--rate", "x"}, &out, &errOut)
	assert.Contains(t, errOut.String(), "apollo11-bench wire: warning: environment variable APOLLO11_BENCH_RAET is not read by any apollo11-bench flag (did you mean APOLLO11_BENCH_RATE?)\n")
	assert.NotContains(t, errOut.String(), "APOLLO11_BENCH_HOLD")
}

// TestReadme_FlagEnvVars keeps envvars.go, the variables the warning
// knows, equal to those of the load's and every scenario's flags, from
// their --help. Run with -update to rewrite it.
func TestReadme_FlagEnvVars(t *testing.T) {
	var helps []string
	for _, args := range append([][]string{{"--help"}}, func() (h [][]string) {
		for name := range scenarios {
			h = append(h, []string{name, "--help"})
		}
		return h
	}()...) {
		var out, errOut bytes.Buffer
		require.Equal(t, 0, run(args, &out, &errOut), "%v: %s", args, errOut.String())
		helps = append(helps, out.String())
	}
	envgen.Check(t, helps, "go test ./cmd/apollo11-bench -run Readme -update", "the load and the scenarios", *updateReadme)
}

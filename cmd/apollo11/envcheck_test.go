package main

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/envgen"
	"github.com/apollo11/apollo11/internal/patience"
)

// A misspelt APOLLO11_* variable is warned about; one that any
// subcommand reads is not, whichever command runs: the client commands,
// the daemons and bench share environment files.
func TestWarnUnknownEnv(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want []string // warnings, in order
	}{
		{[]string{"PATH=/bin", "APOLLO11_DATA_DIR=d", "APOLLO11_ADDR=a:1", "APOLLO11_CONNECT=a:1"}, nil},
		{[]string{"APOLLO11_EXECUTOR_SLOTS=2", "APOLLO11_RUN_FILE=f", "APOLLO11_VAR=k=v", "APOLLO11_WAIT_TIMEOUT=1s"}, nil},
		{[]string{"APOLLO11_BENCH_RATE=5", "APOLLO11_BENCH_EXECUTORS=3", "APOLLO11_TEST_LOG=1"}, nil},
		{[]string{"APOLLO11_DATADIR=/tmp/elsewhere", "APOLLO11_LISTN=0.0.0.0:1", "APOLLO11_LISTEN=127.0.0.1:1"}, []string{
			"apollo11 maincontrol: warning: environment variable APOLLO11_DATADIR is not read by any apollo11 flag (did you mean APOLLO11_DATA_DIR?)\n",
			"apollo11 maincontrol: warning: environment variable APOLLO11_LISTN is not read by any apollo11 flag (did you mean APOLLO11_LISTEN?)\n",
		}},
		{[]string{"APOLLO11_NOTHING_LIKE_IT=1"}, []string{
			"apollo11 maincontrol: warning: environment variable APOLLO11_NOTHING_LIKE_IT is not read by any apollo11 flag\n",
		}},
	} {
		var errOut bytes.Buffer
		warnUnknownEnv(&errOut, "maincontrol", tc.env)
		want := ""
		for _, w := range tc.want {
			want += w
		}
		assert.Equal(t, want, errOut.String(), "%v", tc.env)
	}
}

// Every APOLLO11_* variable the README and the environment file examples
// name is one some flag reads, so none of them would be warned about.
func TestKnownEnvVars_Docs(t *testing.T) {
	known := flagEnvVars
	// The test settings are spelt here too: the daemon does not import
	// patience, which imports testing.
	require.True(t, notFlagVars[patience.ScaleEnv], patience.ScaleEnv)
	require.True(t, notFlagVars[patience.LoadEnv], patience.LoadEnv)
	require.Contains(t, known, "APOLLO11_MAX_FRAME")
	re := regexp.MustCompile(`APOLLO11_[A-Z0-9_]*[A-Z0-9]`)
	for _, path := range []string{"../../README.md", "../../docs/usage.md", "../../docs/configuration.md", "../../docs/operations.md", "../../systemd/maincontrol.env.example", "../../systemd/executor.env.example",
		"../../systemd/apollo11-maincontrol.service", "../../systemd/apollo11-executor@.service"} {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		for _, name := range re.FindAllString(string(b), -1) {
			if strings.HasPrefix(name, benchEnvPrefix) || name == "APOLLO11_BENCH" || name == "APOLLO11_DATADIR" {
				continue // apollo11-bench's (its own test checks them); the prefix; a misspelling
			}
			assert.True(t, slices.Contains(known, name) || notFlagVars[name], "%s names %s, which no flag reads", path, name)
		}
	}
}

// run warns before the command runs (here it fails on a bad flag).
func TestRun_WarnsUnknownEnv(t *testing.T) {
	defer func(e func() []string) { environ = e }(environ)
	environ = func() []string { return []string{"APOLLO11_LISTN=x"} }
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"maincontrol", "--event-loops", "0"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "APOLLO11_LISTN is not read by any apollo11 flag (did you mean APOLLO11_LISTEN?)")
}

// TestReadme_FlagEnvVars keeps envvars.go, the variables warnUnknownEnv
// knows, equal to those of every command's flags. It reads the --help
// tables docs/configuration.md is made from. Run with -update to rewrite it.
func TestReadme_FlagEnvVars(t *testing.T) {
	var helps []string
	for _, args := range documented {
		var out, errb bytes.Buffer
		require.Equal(t, 0, run(append(slices.Clone(args), "--help"), &out, &errb), "%v --help: %s", args, errb.String())
		helps = append(helps, out.String())
	}
	envgen.Check(t, helps, "go test ./cmd/apollo11 -run Readme -update", "every command", *updateReadme)
}

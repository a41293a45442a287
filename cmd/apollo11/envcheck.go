package main

import (
	"io"
	"os"
	"slices"
	"strings"
)

// notFlagVars are APOLLO11_* variables that are not flags but are read
// on purpose (by tests), so not misspellings.
// The daemons run under tests that set them, and must not warn then.
var notFlagVars = map[string]bool{"APOLLO11_TEST_LOG": true, "APOLLO11_BUILTIN_TEST_EXEC": true,
	"APOLLO11_TEST_SCALE": true, "APOLLO11_LOAD_TESTS": true}

// benchEnvPrefix starts the variables of apollo11-bench, which may share
// an environment file with the daemons.
const benchEnvPrefix = "APOLLO11_BENCH_"

// knownEnvVars returns the variable of every flag of every subcommand,
// pipeline's run and status included: a variable one command does not
// read may be meant for another (APOLLO11_ADDR is read by the clients,
// not by the main control, from the same environment file). The flag
// sets are made by asking each command for its --help, which returns
// before anything runs.
func knownEnvVars() map[string]bool {
	return app.EnvVarsOf(func() {
		invocations := [][]string{{"pipeline", "run", "x"}, {"pipeline", "status"}, {"schedule", "add"}}
		for name := range commands {
			if name != "pipeline" && name != "schedule" {
				invocations = append(invocations, []string{name})
			}
		}
		for _, inv := range invocations {
			_ = commands[inv[0]].run(append(slices.Clone(inv[1:]), "--help"), io.Discard, io.Discard)
		}
	})
}

// warnUnknownEnv warns about APOLLO11_* variables that no flag of any
// subcommand reads: a misspelling in an environment file
// (APOLLO11_DATADIR) was ignored without a word, and the daemon ran with
// the default.
func warnUnknownEnv(stderr io.Writer, cmd string, environ []string) {
	app.WarnUnknownEnv(stderr, cmd, environ, knownEnvVars, func(name string) bool {
		return notFlagVars[name] || strings.HasPrefix(name, benchEnvPrefix)
	})
}

// environ is os.Environ, a seam for tests.
var environ = os.Environ

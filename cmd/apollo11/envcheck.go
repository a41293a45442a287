package main

import (
	"io"
	"os"
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

// warnUnknownEnv warns about APOLLO11_* variables that no flag of any
// subcommand reads. A misspelling in an environment file, such as
// APOLLO11_DATADIR, would be ignored without a word, and the daemon would
// run with the default. Every command's variables count (flagEnvVars), as
// the clients and the daemons share environment files.
func warnUnknownEnv(stderr io.Writer, cmd string, environ []string) {
	app.WarnUnknownEnv(stderr, cmd, environ, flagEnvVars, func(name string) bool {
		return notFlagVars[name] || strings.HasPrefix(name, benchEnvPrefix)
	})
}

// environ is os.Environ, a seam for tests.
var environ = os.Environ

package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
)

// notFlagVars are APOLLO11_* variables that are not flags but are read
// on purpose (by tests), so not misspellings.
// The daemons run under tests that set them, and must not warn then.
var notFlagVars = map[string]bool{"APOLLO11_TEST_LOG": true, "APOLLO11_BUILTIN_TEST_EXEC": true,
	"APOLLO11_TEST_SCALE": true, "APOLLO11_LOAD_TESTS": true}

// collectFlagSets, when set, receives every flag set newFlagSetEnv makes
// (see knownEnvVars).
var collectFlagSets func(*flag.FlagSet)

// knownEnvVars returns the variable of every flag of every subcommand,
// bench's scenarios and pipeline's run and status included: a variable
// one command does not read may be meant for another (APOLLO11_ADDR is
// read by the clients, not by the main control, from the same
// environment file). The flag sets are made by asking each command for
// its --help, which returns before anything runs.
func knownEnvVars() map[string]bool {
	var sets []*flag.FlagSet
	collectFlagSets = func(fs *flag.FlagSet) { sets = append(sets, fs) }
	defer func() { collectFlagSets = nil }()
	invocations := [][]string{{"pipeline", "run", "x"}, {"pipeline", "status"}, {"bench"}}
	for name := range commands {
		if name != "pipeline" && name != "bench" {
			invocations = append(invocations, []string{name})
		}
	}
	for name := range benchSubcommands {
		invocations = append(invocations, []string{"bench", name})
	}
	for _, inv := range invocations {
		_ = commands[inv[0]].run(append(slices.Clone(inv[1:]), "--help"), io.Discard, io.Discard)
	}
	known := map[string]bool{}
	for _, fs := range sets {
		prefix := flagEnvPrefix[fs]
		fs.VisitAll(func(f *flag.Flag) { known[envName(prefix, f.Name)] = true })
		delete(flagEnvPrefix, fs) // they were made only to be read here
	}
	return known
}

// warnUnknownEnv warns about APOLLO11_* variables that no flag of any
// subcommand reads: a misspelling in an environment file
// (APOLLO11_DATADIR) was ignored without a word, and the daemon ran with
// the default.
func warnUnknownEnv(stderr io.Writer, cmd string, environ []string) {
	var set []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, envPrefix) && !notFlagVars[name] {
			set = append(set, name)
		}
	}
	if len(set) == 0 {
		return
	}
	known := knownEnvVars()
	sort.Strings(set)
	for _, name := range set {
		if known[name] {
			continue
		}
		hint := ""
		if near := nearestName(name, known); near != "" {
			hint = " (did you mean " + near + "?)"
		}
		fmt.Fprintf(stderr, "apollo11 %s: warning: environment variable %s is not read by any apollo11 flag%s\n", cmd, name, hint)
	}
}

// nearestName returns the known name closest to name (at most 2 edits,
// underscores not counted), or "".
func nearestName(name string, known map[string]bool) string {
	strip := func(s string) string { return strings.ReplaceAll(s, "_", "") }
	best, bestD := "", 3
	for k := range known {
		if d := editDistance(strip(name), strip(k)); d < bestD || d == bestD && k < best {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// environ is os.Environ, a seam for tests.
var environ = os.Environ

package cli

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// WarnUnknownEnv warns about variables with the program's prefix
// that no flag reads (known). It skips those skip says are read elsewhere.
// Without it, a misspelling in an environment file was ignored without a word.
func (p *Program) WarnUnknownEnv(w io.Writer, cmd string, environ []string, known func() map[string]bool, skip func(string) bool) {
	var set []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, p.EnvPrefix) && !skip(name) {
			set = append(set, name)
		}
	}
	if len(set) == 0 {
		return
	}
	names := known()
	sort.Strings(set)
	for _, name := range set {
		if names[name] {
			continue
		}
		hint := ""
		if near := nearestName(name, names); near != "" {
			hint = " (did you mean " + near + "?)"
		}
		fmt.Fprintf(w, "%s: warning: environment variable %s is not read by any %s flag%s\n", strings.TrimSpace(p.Name+" "+cmd), name, p.Name, hint)
	}
}

// EnvVarsOf returns the variable of every flag of every flag set made
// while show runs. show asks each command for its --help.
// That makes the command's flag set and returns before anything runs.
func (p *Program) EnvVarsOf(show func()) map[string]bool {
	var sets []*flag.FlagSet
	p.Made = func(fs *flag.FlagSet) { sets = append(sets, fs) }
	defer func() { p.Made = nil }()
	show()
	known := map[string]bool{}
	for _, fs := range sets {
		fs.VisitAll(func(f *flag.Flag) { known[p.EnvName(f.Name)] = true })
	}
	return known
}

// nearestName returns the known name closest to name, or "".
// It allows at most 2 edits, not counting underscores.
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

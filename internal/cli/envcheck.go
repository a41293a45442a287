package cli

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// WarnUnknownEnv warns about variables with the program's prefix
// that no flag reads (known). It skips those skip says are read elsewhere.
// Without it, a misspelling in an environment file was ignored without a word.
func (p *Program) WarnUnknownEnv(w io.Writer, cmd string, environ []string, known []string, skip func(string) bool) {
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
	sort.Strings(set)
	for _, name := range set {
		if slices.Contains(known, name) {
			continue
		}
		hint := ""
		if near := nearestName(name, known); near != "" {
			hint = " (did you mean " + near + "?)"
		}
		fmt.Fprintf(w, "%s: warning: environment variable %s is not read by any %s flag%s\n", strings.TrimSpace(p.Name+" "+cmd), name, p.Name, hint)
	}
}

// nearestName returns the known name closest to name, or "".
// It allows at most 2 edits, not counting underscores.
func nearestName(name string, known []string) string {
	strip := func(s string) string { return strings.ReplaceAll(s, "_", "") }
	best, bestD := "", 3
	for _, k := range known {
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

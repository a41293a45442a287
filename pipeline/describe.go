package pipeline

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Describe prints the plan. It lists the steps in submission order with
// what they depend on. It ends with the longest chain.
func (p *Plan) Describe(w io.Writer) {
	fmt.Fprintf(w, "pipeline %s: %d steps, longest chain %d (%s)\n", p.Name, len(p.Steps), len(p.Longest), strings.Join(p.Longest, " -> "))
	for i, s := range p.Steps {
		fmt.Fprintf(w, "%3d. %s  type=%s", i+1, s.ID, s.Type)
		if len(s.DependsOn) > 0 {
			fmt.Fprintf(w, "  after=%s", strings.Join(s.DependsOn, ","))
		}
		if s.MaxAttempts > 0 {
			fmt.Fprintf(w, "  max_attempts=%d", s.MaxAttempts)
		}
		if s.Timeout > 0 {
			fmt.Fprintf(w, "  timeout=%s", s.Timeout)
		}
		if s.Delay > 0 {
			fmt.Fprintf(w, "  delay=%s", s.Delay)
		}
		if s.Priority > 0 {
			fmt.Fprintf(w, "  priority=%d", s.Priority)
		}
		if s.Key != "" {
			fmt.Fprintf(w, "  key=%s", s.Key)
		}
		fmt.Fprintln(w)
		keys := slices.Sorted(maps.Keys(s.Args))
		for _, k := range keys {
			fmt.Fprintf(w, "       arg.%s=%s\n", k, s.Args[k])
		}
	}
}

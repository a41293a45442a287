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
		if s.Optional {
			fmt.Fprint(w, "  optional")
		}
		if s.When != "" {
			fmt.Fprintf(w, "  when=%s", s.When)
		}
		fmt.Fprintln(w)
		for _, k := range slices.Sorted(maps.Keys(s.Args)) {
			fmt.Fprintf(w, "       arg.%s=%s\n", k, s.Args[k])
		}
		if c := s.Compensate; c != nil {
			fmt.Fprintf(w, "       compensate type=%s\n", c.Type)
			for _, k := range slices.Sorted(maps.Keys(c.Args)) {
				fmt.Fprintf(w, "         arg.%s=%s\n", k, c.Args[k])
			}
		}
	}
}

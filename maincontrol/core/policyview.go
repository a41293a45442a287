// policyview.go: read-only views of the policies in force, for metrics and
// listings.

package core

import (
	"cmp"
	"slices"
)

// PolicyTypeInfo is one listed type's policy and how it holds the type.
type PolicyTypeInfo struct {
	Type   string
	Policy Policy // merged with the defaults
	Active int    // dispatched and running tasks
	// Held says why pending tasks wait with an executor free: "max_running",
	// "rate", or "" when they do not.
	Held string
}

// PolicyTypes returns the listed types' policies in name order; the
// defaults come first under the name "" when they set anything.
func (c *Core) PolicyTypes() []PolicyTypeInfo {
	ps := c.pol
	if ps == nil {
		return nil
	}
	out := make([]PolicyTypeInfo, 0, len(ps.byType)+1)
	if ps.other != nil {
		out = append(out, PolicyTypeInfo{Policy: ps.other.Policy})
	}
	now := c.now()
	for name, tp := range ps.byType {
		info := PolicyTypeInfo{Type: name, Policy: tp.Policy}
		if tt := c.types[name]; tt != nil {
			info.Active = tt.active()
			info.Held = c.heldBy(tt, tp, now)
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b PolicyTypeInfo) int { return cmp.Compare(a.Type, b.Type) })
	return out
}

// heldBy says which limit keeps tt's pending tasks from a free executor.
func (c *Core) heldBy(tt *taskType, tp *typePolicy, now int64) string {
	if tt.pending == 0 || tt.free.top() == nil {
		return ""
	}
	switch {
	case tp.MaxRunning > 0 && tt.active() >= tp.MaxRunning:
		return "max_running"
	case tp.RatePerSec > 0 && tt.rate != nil && !tt.rate.room(now, tp.RatePerSec):
		return "rate"
	}
	return ""
}

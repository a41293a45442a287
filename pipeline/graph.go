package pipeline

import (
	"slices"
	"strings"
)

// CycleError reports a dependency cycle, with its path.
type CycleError struct {
	// Path is in run order, as the longest chain is printed. Each step
	// would have to run before the next, since the next depends on it.
	// The first step is repeated at the end, as in a -> b -> a.
	Path []string
}

func (e *CycleError) Error() string {
	return "invalid pipeline: dependency cycle: " + strings.Join(e.Path, " -> ")
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *CycleError) Is(target error) bool { return target == ErrInvalid }

// findCycle returns the path of a dependency cycle, or nil. A step's edges
// point at the steps it depends on.
func findCycle(steps []Step, index map[string]int) []string {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(steps))
	var stack []int
	var found []string
	var visit func(i int) bool
	visit = func(i int) bool {
		color[i] = grey
		stack = append(stack, i)
		for _, d := range steps[i].DependsOn {
			j := index[d]
			switch color[j] {
			case grey:
				at := slices.Index(stack, j)
				for _, k := range stack[at:] {
					found = append(found, steps[k].ID)
				}
				found = append(found, steps[j].ID)
				return true
			case white:
				if visit(j) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
		return false
	}
	for i := range steps {
		if color[i] == white && visit(i) {
			// The walk follows "depends on" edges. An arrow in the
			// path means "runs before". So the path goes the other way.
			slices.Reverse(found)
			return found
		}
	}
	return nil
}

// topoOrder returns the steps so that each comes after its dependencies.
// Among steps ready at the same time, file order is kept.
func topoOrder(steps []Step, index map[string]int) []Step {
	waiting := make([]int, len(steps))
	users := make([][]int, len(steps))
	for i, s := range steps {
		waiting[i] = len(s.DependsOn)
		for _, d := range s.DependsOn {
			users[index[d]] = append(users[index[d]], i)
		}
	}
	var ready []int
	for i := range steps {
		if waiting[i] == 0 {
			ready = append(ready, i)
		}
	}
	out := make([]Step, 0, len(steps))
	for len(ready) > 0 {
		slices.Sort(ready) // file order among the ready
		i := ready[0]
		ready = ready[1:]
		out = append(out, steps[i])
		for _, u := range users[i] {
			if waiting[u]--; waiting[u] == 0 {
				ready = append(ready, u)
			}
		}
	}
	return out
}

// longestChain returns the longest path of dependencies through the plan,
// first step to last. order is topological.
func longestChain(order []Step) []string {
	depth := map[string]int{}
	prev := map[string]string{}
	best := ""
	for _, s := range order {
		depth[s.ID] = 1
		for _, d := range s.DependsOn {
			if depth[d]+1 > depth[s.ID] {
				depth[s.ID], prev[s.ID] = depth[d]+1, d
			}
		}
		if best == "" || depth[s.ID] > depth[best] {
			best = s.ID
		}
	}
	var chain []string
	for id := best; id != ""; id = prev[id] {
		chain = append(chain, id)
	}
	slices.Reverse(chain)
	return chain
}

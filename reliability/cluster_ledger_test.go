package reliability_test

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"
)

// ledgerCounts is what the cluster group asserts besides linearizability:
// confirmed changes lost, tasks with two accepted results, ids reused.
// The model implies them, but these name the task at fault plainly.
type ledgerCounts struct {
	confirmed int // submits answered with a task id
	accepted  int // results answered accepted=true
	lost      int // confirmed submits or accepted results missing at the end
	doubled   int // tasks with more than one accepted result
	reused    int // task ids confirmed for two keys
	problems  []string
}

// checkLedger reads what was confirmed from ops (replies that came; lost
// ones confirmed nothing) and checks it against the tasks' final states,
// by id; a confirmed task missing from final is lost.
func checkLedger(ops []porcupine.Operation, final map[uint64]string) ledgerCounts {
	var c ledgerCounts
	keyID := map[string]uint64{}
	idKey := map[uint64]string{}
	accepted := map[uint64]int{}
	sorted := append([]porcupine.Operation(nil), ops...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Return < sorted[j].Return })
	for _, op := range sorted {
		in, out := op.Input.(taskOp), op.Output.(taskOut)
		if out.Unknown {
			continue
		}
		switch in.Kind {
		case opSubmit:
			if old, ok := keyID[in.Key]; ok && old != out.ID {
				c.lost++
				c.problems = append(c.problems, fmt.Sprintf("key %s confirmed as task %d, then as task %d", in.Key, old, out.ID))
				continue
			}
			if old, ok := idKey[out.ID]; ok && old != in.Key {
				c.reused++
				c.problems = append(c.problems, fmt.Sprintf("task id %d confirmed for key %s, then for key %s", out.ID, old, in.Key))
				continue
			}
			keyID[in.Key], idKey[out.ID] = out.ID, in.Key
		case opResult:
			if out.Accepted {
				if accepted[in.ID]++; accepted[in.ID] == 2 {
					c.doubled++
					c.problems = append(c.problems, fmt.Sprintf("task %d has two accepted results", in.ID))
				}
			}
		}
	}
	c.confirmed, c.accepted = len(idKey), len(accepted)
	// A task with an accepted result exists, even if its submit's reply
	// was lost.
	ids := make([]uint64, 0, len(idKey))
	for id := range idKey {
		ids = append(ids, id)
	}
	for id := range accepted {
		if _, ok := idKey[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		st, ok := final[id]
		switch {
		case !ok:
			c.lost++
			c.problems = append(c.problems, fmt.Sprintf("confirmed task %d is gone", id))
		case accepted[id] > 0 && st != "succeeded":
			c.lost++
			c.problems = append(c.problems, fmt.Sprintf("task %d: a result was accepted, but the task is %s", id, st))
		}
	}
	return c
}

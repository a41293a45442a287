package core

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dependentEntries counts the entries of every dependents list, and the
// live ones among them: a waiting task under each dependency not ended.
func dependentEntries(c *Core) (total, live int) {
	for _, l := range c.dependents {
		total += len(l.ids)
	}
	c.tasks.scan(0, Waiting, func(t *task) bool {
		for _, d := range t.deps() {
			if dt := c.tasks.get(d); dt != nil && !dt.state.Terminal() {
				live++
			}
		}
		return true
	})
	return total, live
}

// A client looping "submit a task depending on many long-lived ones, then
// have it end" must not grow memory while retention forgets what ended:
// the dependents lists follow the waiting tasks (finding 1 of the h11
// exhaustion probe, where it grew 400 KB a cycle).
func TestCore_DependentsOfEndedWaitingTasksAreFreed(t *testing.T) {
	const (
		longLived = 64
		cycles    = 300
		keepEvery = 25 // these stay waiting, so the lists hold live entries too
	)
	for _, tc := range []struct {
		name string
		// end makes the waiting task w end; extra is a pending task w
		// also depends on, there to end badly.
		end func(h *harness, cl PeerID, w, extra uint64)
		// endsAtSubmit: extra is cancelled before w is submitted, so w
		// is cancelled by its submit.
		endsAtSubmit bool
	}{
		{name: "cancelled by the client", end: func(h *harness, cl PeerID, w, extra uint64) {
			for _, id := range []uint64{w, extra} { // extra after: w's end is the client's
				h.send(cl, "cancel", "req", "c", "task_id", itoa(id))
				h.expect(cl, "cancelled")
			}
		}},
		{name: "cancelled because another dependency was", end: func(h *harness, cl PeerID, _, extra uint64) {
			h.send(cl, "cancel", "req", "c", "task_id", itoa(extra))
			h.expect(cl, "cancelled")
		}},
		{name: "cancelled at submit", endsAtSubmit: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.RetentionMax = 10 })
			cl := h.client()
			var deps []string
			for range longLived {
				deps = append(deps, itoa(h.submit(cl, "task_type", "nobody")))
			}
			var kept []uint64
			for i := range cycles {
				extra := h.submit(cl, "task_type", "nobody")
				if tc.endsAtSubmit {
					h.send(cl, "cancel", "req", "c", "task_id", itoa(extra))
					h.expect(cl, "cancelled")
				}
				w := h.submit(cl, "task_type", "y", "depends_on", strings.Join(deps, ",")+","+itoa(extra))
				if i%keepEvery == 0 && !tc.endsAtSubmit {
					kept = append(kept, w)
				} else if tc.end != nil {
					tc.end(h, cl, w, extra)
				}
				require.Equal(t, i%keepEvery == 0 && !tc.endsAtSubmit, h.state(w) == Waiting, "cycle %d", i)
				h.advance(time.Second) // retention forgets what ended
				total, live := dependentEntries(h.c)
				require.LessOrEqual(t, total, 2*live, "cycle %d: dependents entries follow the waiting tasks", i)
				require.NoError(t, checkDependents(h.c), "cycle %d", i)
			}
			assert.Less(t, h.c.tasks.count, 3*longLived+10, "retention forgot the ended tasks")
			h.checkReplay()
			require.Equal(t, dump(h.c), dump(h.loaded(snapshotEntries(t, h.c), nil)), "snapshot")

			// The waiting tasks left are still followed, in the order
			// they were submitted, when a dependency ends.
			h.send(cl, "cancel", "req", "c", "task_id", deps[0])
			h.expect(cl, "cancelled")
			var seqs []uint64
			for _, w := range kept {
				require.Equal(t, Cancelled, h.state(w))
				seqs = append(seqs, h.get(w).seq)
			}
			assert.IsIncreasing(t, seqs, "cancelled in the order they were submitted")
			assert.Empty(t, h.c.dependents)
			h.checkReplay()
		})
	}
}

// Ending the dependents of one huge list, in any order, costs a bounded
// number of checks per entry: no scan of the list per removal.
func TestDependents_CompactionIsAmortized(t *testing.T) {
	const n = 20_000
	orders := map[string]func(i int) uint64{
		"oldest first": func(i int) uint64 { return uint64(1 + i) },
		"newest first": func(i int) uint64 { return uint64(n - i) },
		"interleaved":  func(i int) uint64 { return uint64(1 + (i*7919)%n) },
	}
	for name, order := range orders {
		t.Run(name, func(t *testing.T) {
			const d = 1 << 40 // the dependency: any id not among the dependents
			ds := make(dependents)
			waiting := make(map[uint64]bool, n)
			for id := uint64(1); id <= n; id++ {
				ds.add(d, id)
				waiting[id] = true
			}
			checks := 0
			isWaiting := func(id uint64) bool { checks++; return waiting[id] }
			for i := range n {
				id := order(i)
				require.True(t, waiting[id])
				delete(waiting, id)
				ds.ended([]uint64{d, d + 1}, isWaiting) // d+1 lists nobody: skipped
				require.LessOrEqual(t, len(ds[d].ids), 2*len(waiting)+1, "after %d ends", i+1)
			}
			assert.Empty(t, ds, "the list goes with its last waiting task")
			assert.LessOrEqual(t, checks, 3*n, "checks for %d ends", n)
		})
	}
}

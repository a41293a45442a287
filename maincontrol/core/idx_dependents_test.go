package core

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// each calls fn for every task with dependents, in no set order, with
// its list (not to be kept or changed) and the number of stale entries.
func (ds *dependents) each(fn func(d uint64, ids []uint64, stale int)) {
	for n, b := range ds.blocks {
		for i, h := range b.heads {
			d := n<<chunkBits | uint64(i)
			switch {
			case h == 0:
			case h&listHead == 0:
				fn(d, []uint64{h}, 0)
			default:
				l := ds.lists[h&^listHead]
				fn(d, l.ids, l.stale)
			}
		}
	}
}

// of returns d's list as each would (nil when it has none).
func (ds *dependents) of(d uint64) []uint64 {
	b := ds.block(d, false)
	if b == nil {
		return nil
	}
	switch h := b.heads[d&(chunkSize-1)]; {
	case h == 0:
		return nil
	case h&listHead == 0:
		return []uint64{h}
	default:
		return ds.lists[h&^listHead].ids
	}
}

// dependentEntries counts the entries of every dependents list, and the
// live ones among them: a waiting task under each dependency not ended.
func dependentEntries(c *Core) (total, live int) {
	c.dependents.each(func(_ uint64, ids []uint64, _ int) { total += len(ids) })
	c.tasks.scan(0, Waiting, func(t *task) bool {
		for d := range t.deps().all() {
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
			assert.Zero(t, h.c.dependents.len())
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
			var ds dependents
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
				ds.ended(d, isWaiting)
				ds.ended(d+1, isWaiting) // lists nobody: skipped
				require.LessOrEqual(t, len(ds.of(d)), 2*len(waiting)+1, "after %d ends", i+1)
			}
			assert.Zero(t, ds.len(), "the list goes with its last waiting task")
			assert.Empty(t, ds.blocks, "and its block with it")
			assert.LessOrEqual(t, checks, 3*n, "checks for %d ends", n)
		})
	}
}

// The index keeps a lone dependent in its head, with no list, and moves to
// a list from the second; every change keeps the counts that free blocks
// and list entries.
func TestDependents_Heads(t *testing.T) {
	const top = listHead | 7 // an id no live core makes: always in a list
	type step struct {
		add  [2]uint64 // d, id
		end  uint64    // a dependent that ended: ended for each of endOf
		take uint64    // a dependency that ended: its list, in want
		want []uint64
	}
	endOf := []uint64{5, 5 + chunkSize}
	cases := []struct {
		name  string
		steps []step
		// of is d 5's list at the end; lists and blocks are what the
		// index holds then.
		of            []uint64
		lists, blocks int
	}{
		{name: "one dependent, no list", steps: []step{{add: [2]uint64{5, 100}}},
			of: []uint64{100}, blocks: 1},
		{name: "one dependent taken", steps: []step{{add: [2]uint64{5, 100}}, {take: 5, want: []uint64{100}}}},
		{name: "one dependent that ended", steps: []step{{add: [2]uint64{5, 100}}, {end: 100}}},
		{name: "two make a list, in order", steps: []step{{add: [2]uint64{5, 100}}, {add: [2]uint64{5, 101}}},
			of: []uint64{100, 101}, lists: 1, blocks: 1},
		{name: "a list taken is reused", steps: []step{
			{add: [2]uint64{5, 100}}, {add: [2]uint64{5, 101}}, {take: 5, want: []uint64{100, 101}},
			{add: [2]uint64{5, 102}}, {add: [2]uint64{5, 103}}, {add: [2]uint64{5, 104}},
		}, of: []uint64{102, 103, 104}, lists: 1, blocks: 1},
		{name: "compacted down to one, then a list again", steps: []step{
			{add: [2]uint64{5, 100}}, {add: [2]uint64{5, 101}}, {add: [2]uint64{5, 102}}, {add: [2]uint64{5, 103}},
			{end: 100}, {end: 102}, {end: 101}, // the third stale entry of four compacts
			{add: [2]uint64{5, 104}},
		}, of: []uint64{103, 104}, lists: 1, blocks: 1},
		{name: "compacted down to one", steps: []step{
			{add: [2]uint64{5, 100}}, {add: [2]uint64{5, 101}}, {add: [2]uint64{5, 102}},
			{end: 100}, {end: 101},
		}, of: []uint64{102}, blocks: 1},
		{name: "an id with the top bit alone", steps: []step{{add: [2]uint64{5, top}}},
			of: []uint64{top}, lists: 1, blocks: 1},
		{name: "an id with the top bit, left alone by compaction", steps: []step{
			{add: [2]uint64{5, 100}}, {add: [2]uint64{5, 101}}, {add: [2]uint64{5, top}}, {end: 100}, {end: 101},
		}, of: []uint64{top}, lists: 1, blocks: 1},
		{name: "two blocks, freed with their last head", steps: []step{
			{add: [2]uint64{5, 100}}, {add: [2]uint64{5 + chunkSize, 100}}, {add: [2]uint64{6, 101}}, {end: 100},
		}, blocks: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ds dependents
			waiting := map[uint64]bool{}
			isWaiting := func(id uint64) bool { return waiting[id] }
			for i, s := range tc.steps {
				switch {
				case s.add != [2]uint64{}:
					ds.add(s.add[0], s.add[1])
					waiting[s.add[1]] = true
				case s.end != 0:
					delete(waiting, s.end)
					for _, d := range endOf {
						ds.ended(d, isWaiting)
					}
				default:
					assert.Equal(t, s.want, ds.take(s.take, nil), "step %d", i)
					assert.Nil(t, ds.of(s.take), "step %d: taken", i)
				}
			}
			assert.Equal(t, tc.of, ds.of(5))
			assert.Equal(t, tc.lists, len(ds.lists)-len(ds.free), "lists in use")
			assert.LessOrEqual(t, len(ds.lists), 1, "a list given back is used again")
			assert.Len(t, ds.blocks, tc.blocks)
			heads := 0
			ds.each(func(uint64, []uint64, int) { heads++ })
			assert.Equal(t, heads, ds.len())
		})
	}
}

package core

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// Long depends_on lists take other paths than short ones (past shortDeps:
// deduplicated through depMarks; dependents in blocks and lists). These
// tests hold them to the rules of spec section 5 that short lists follow.

// depsOf returns t's dependencies, in the order kept.
func depsOf(t *task) []uint64 { return t.deps().appendTo(nil) }

// firstOccurrences is the reference deduplication: each id once, where it
// first appears.
func firstOccurrences(ids []uint64) []uint64 {
	seen := map[uint64]bool{}
	var out []uint64
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

func joinIDs(ids []uint64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = itoa(id)
	}
	return strings.Join(s, ",")
}

// requireMarksClear checks that no submit left a dependency marked, nor
// kept the sets of marks: a mark left behind would drop that id from a
// later list as a duplicate, and sets kept from list to list grew with
// the directory's indexes.
func requireMarksClear(t testing.TB, c *Core) {
	t.Helper()
	require.Zero(t, len(c.depMarks.dir), "sets of marks kept after the list was read")
	require.LessOrEqual(t, cap(c.depMarks.dir), keptIndexes)
}

// pendingTasks submits n tasks no executor takes and returns their ids.
func pendingTasks(h *harness, cl PeerID, n int) []uint64 {
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = h.submit(cl, "task_type", "nobody")
	}
	return ids
}

func TestCore_SubmitDependsOnDeduplicates(t *testing.T) {
	// 2,100 pending tasks: lists span three chunks of the table.
	const n = 2*chunkSize + 52
	cases := []struct {
		name string
		list func(p []uint64) []uint64
	}{
		{"short, no repeat", func(p []uint64) []uint64 { return p[:5] }},
		{"short, the first repeated last", func(p []uint64) []uint64 { return []uint64{p[0], p[1], p[2], p[0]} }},
		{"one id many times", func(p []uint64) []uint64 {
			var l []uint64
			for range 100 {
				l = append(l, p[7])
			}
			return l
		}},
		{"a repeat just at the switch to marks", func(p []uint64) []uint64 {
			l := append([]uint64(nil), p[:shortDeps]...)
			return append(l, p[0], p[shortDeps], p[shortDeps-1], p[shortDeps])
		}},
		{"repeats of ids read before the switch, long after it", func(p []uint64) []uint64 {
			l := append([]uint64(nil), p[:3*shortDeps]...)
			return append(l, p[:shortDeps]...)
		}},
		{"every id twice, interleaved", func(p []uint64) []uint64 {
			var l []uint64
			for i := range 200 {
				l = append(l, p[i], p[i/2])
			}
			return l
		}},
		{"all of them, backwards then forwards", func(p []uint64) []uint64 {
			var l []uint64
			for i := len(p) - 1; i >= 0; i-- {
				l = append(l, p[i])
			}
			return append(l, p...)
		}},
		{"across chunks, out of order, repeats last", func(p []uint64) []uint64 {
			var l []uint64
			for i := range len(p) {
				l = append(l, p[(i*997)%len(p)])
			}
			return append(l, p[len(p)-1], p[0], p[chunkSize])
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			cl := h.client()
			p := pendingTasks(h, cl, n)
			list := tc.list(p)
			want := firstOccurrences(list)
			for range 2 { // the second meets what the first left behind
				w := h.submit(cl, "task_type", "y", "depends_on", joinIDs(list))
				assert.Equal(t, want, depsOf(h.get(w)), "each id once, where it first appears")
				assert.Equal(t, Waiting, h.state(w))
				requireMarksClear(t, h.c)
			}
			require.NoError(t, checkDependents(h.c))
			h.checkReplay()
			require.Equal(t, dump(h.c), dump(h.loaded(snapshotEntries(t, h.c), nil)), "snapshot")
		})
	}
}

func TestCore_SubmitDependsOnRefused(t *testing.T) {
	const n = chunkSize + 100
	const unknown = 1 << 40 // never a task here
	cases := []struct {
		name string
		list func(p []uint64) string
		// want is in the error message; "" for a submit accepted as a
		// keyed duplicate.
		want string
	}{
		{"unknown first", func(p []uint64) string { return joinIDs(append([]uint64{unknown}, p...)) },
			fmt.Sprintf("unknown task %d", uint64(unknown))},
		{"unknown at the switch to marks", func(p []uint64) string {
			return joinIDs(append(append(p[:shortDeps:shortDeps], unknown), p[shortDeps:]...))
		}, fmt.Sprintf("unknown task %d", uint64(unknown))},
		{"the first of two unknown, deep in a long list with repeats", func(p []uint64) string {
			l := append(append([]uint64(nil), p...), p[:50]...)
			return joinIDs(append(l, unknown+1, p[3], unknown+1, unknown))
		}, fmt.Sprintf("unknown task %d", uint64(unknown+1))},
		{"0 is no task", func(p []uint64) string { return joinIDs(p[:40]) + ",0" }, "unknown task 0"},
		{"a bad item after an unknown id", func(p []uint64) string { return joinIDs(p) + "," + itoa(uint64(unknown)) + ",x1" },
			`not a task id: "x1"`},
		{"a bad list after an unknown id", func(p []uint64) string { return joinIDs(p) + "," + itoa(uint64(unknown)) + ",,1" },
			"bad list"},
		{"a bad item before an unknown id", func(p []uint64) string { return joinIDs(p) + ",-1," + itoa(uint64(unknown)) },
			`not a task id: "-1"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			cl := h.client()
			p := pendingTasks(h, cl, n)
			list := tc.list(p)
			h.send(cl, "submit", "req", "d", "task_type", "y", "depends_on", list)
			e := h.expectErr(cl, wire.CodeBadRequest)
			assert.Contains(t, e.Value("message"), tc.want)
			assert.Equal(t, n, h.c.tasks.count, "no task made")
			requireMarksClear(t, h.c)
			// The same list with a key already known: answered with that
			// task, whatever the list holds (the key is checked first),
			// when the list at least parses.
			k := h.submit(cl, "task_type", "y", "key", "k")
			h.send(cl, "submit", "req", "d", "task_type", "y", "key", "k", "depends_on", list)
			if strings.HasPrefix(tc.want, "unknown") {
				m := h.expect(cl, "submitted")
				assert.Equal(t, itoa(k), m.Value("task_id"))
				assert.Equal(t, "true", m.Value("duplicate"))
			} else {
				h.expectErr(cl, wire.CodeBadRequest)
			}
			requireMarksClear(t, h.c)
			// And nothing left behind changes the next list.
			w := h.submit(cl, "task_type", "y", "depends_on", joinIDs(append(p, p...)))
			assert.Equal(t, p, depsOf(h.get(w)))
			h.checkReplay()
		})
	}
}

// A dependency forgotten by retention is unknown to a new submit, long
// list or short, while the table's first chunks are freed under the marks.
func TestCore_SubmitDependsOnForgotten(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RetentionMax = 1 })
	cl := h.client()
	old := pendingTasks(h, cl, chunkSize+10)
	p := pendingTasks(h, cl, 3*shortDeps)
	// The old tasks end and are forgotten: the table drops its first chunk.
	for _, id := range old {
		h.send(cl, "cancel", "req", "c", "task_id", itoa(id))
		h.expect(cl, "cancelled")
	}
	h.advance(2 * time.Second)
	require.Nil(t, h.c.tasks.get(old[0]))
	h.send(cl, "submit", "req", "d", "task_type", "y", "depends_on", joinIDs(append(p, old[5])))
	e := h.expectErr(cl, wire.CodeBadRequest)
	assert.Contains(t, e.Value("message"), "unknown task "+itoa(old[5]))
	requireMarksClear(t, h.c)
	w := h.submit(cl, "task_type", "y", "depends_on", joinIDs(append(p, p[0])))
	assert.Equal(t, p, depsOf(h.get(w)))
	requireMarksClear(t, h.c)
}

// The task a submit is cancelled for names the first dependency in
// depends_on order that failed or was cancelled, not the lowest id, nor the
// one that ended first.
func TestCore_SubmitDependsOnEndedNamesTheFirstInOrder(t *testing.T) {
	for _, long := range []bool{false, true} {
		t.Run(fmt.Sprintf("long=%v", long), func(t *testing.T) {
			h := newHarness(t)
			cl := h.client()
			var pad []uint64
			if long {
				pad = pendingTasks(h, cl, 3*shortDeps)
			}
			failed := h.submit(cl, "task_type", "x", "max_attempts", "1")
			cancelled := h.submit(cl, "task_type", "nobody")
			ex := h.executor("e1", "x", 1)
			id, v := h.task(ex)
			h.start(ex, id, v)
			h.accepted(ex, id, v, "failed")
			h.send(cl, "cancel", "req", "c", "task_id", itoa(cancelled))
			h.expect(cl, "cancelled")
			// failed ended first and has the lower id; cancelled comes
			// first in the list, after a repeat of a pending one.
			list := append(append([]uint64(nil), pad...), cancelled, failed, cancelled)
			if long {
				list = append([]uint64{pad[5]}, list...)
			}
			w := h.submit(cl, "task_type", "y", "depends_on", joinIDs(list), "wait", "true")
			assert.Equal(t, Cancelled, h.state(w))
			assert.Equal(t, fmt.Sprintf("dependency %d cancelled", cancelled), h.get(w).errText())
			d := h.expect(cl, "done")
			assert.Equal(t, fmt.Sprintf("dependency %d cancelled", cancelled), d.Value("error"))
			assert.Zero(t, h.c.dependents.len(), "the cancelled task is no dependent of the pending ones")
			require.NoError(t, checkDependents(h.c))
			h.checkReplay()
		})
	}
}

// Tasks waiting on long lists that share dependencies are released, or
// cancelled, in the order they were submitted, whichever dependency ends
// last or fails, and after some of them ended early (stale entries, lists
// compacted down to one entry and grown again).
func TestCore_DependentsOfLongListsEndInSubmitOrder(t *testing.T) {
	const waiters = 7
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) {
			h := newHarness(t)
			cl := h.client()
			shared := make([]uint64, 3*shortDeps)
			for i := range shared {
				shared[i] = h.submit(cl, "task_type", "x", "max_attempts", "1")
			}
			// Waiting tasks: each names the shared list in its own order,
			// with repeats; some are cancelled by the client, so the
			// lists hold stale entries and compact.
			var ws, live []uint64
			for i := range waiters {
				list := append([]uint64(nil), shared[i:]...)
				list = append(list, shared[:i+1]...)
				ws = append(ws, h.submit(cl, "task_type", "y", "depends_on", joinIDs(list), "wait", "true"))
			}
			for i, w := range ws {
				if i%3 == 2 {
					h.send(cl, "cancel", "req", "c", "task_id", itoa(w))
					h.expect(cl, "done")
					h.expect(cl, "cancelled")
					continue
				}
				live = append(live, w)
			}
			// One more after the cancels: it joins lists already compacted.
			late := h.submit(cl, "task_type", "y", "depends_on", joinIDs(shared), "wait", "true")
			live = append(live, late)
			require.NoError(t, checkDependents(h.c))
			h.checkReplay()

			ex := h.executor("e1", "x", 1)
			for i := range shared {
				id, v := h.task(ex)
				h.start(ex, id, v)
				status := "succeeded"
				if fail && i == len(shared)/2 {
					status = "failed"
				}
				h.accepted(ex, id, v, status)
				require.NoError(t, checkDependents(h.c), "after %d ends", i+1)
				if status == "failed" {
					break
				}
			}
			var got []uint64
			for _, m := range h.drain(cl) {
				if m.Type() == "done" {
					id, err := m.Uint("task_id")
					require.NoError(t, err)
					got = append(got, id)
				}
			}
			var seqs []uint64
			for _, w := range live {
				if fail {
					require.Equal(t, Cancelled, h.state(w))
				} else {
					require.Equal(t, Pending, h.state(w))
				}
				seqs = append(seqs, h.get(w).seq)
			}
			assert.IsIncreasing(t, seqs, "released or cancelled in the order they were submitted")
			if fail {
				assert.Equal(t, live, got, "done in the order they were submitted")
			}
			assert.Zero(t, h.c.dependents.len())
			h.checkReplay()
			require.Equal(t, dump(h.c), dump(h.loaded(snapshotEntries(t, h.c), nil)), "snapshot")
		})
	}
}

// A task whose dependencies have all succeeded is pending at once, long
// list or short; one not yet ended, wherever it stands, makes it wait.
func TestCore_SubmitDependsOnSucceeded(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	done := make([]uint64, 3*shortDeps)
	for i := range done {
		done[i] = h.submit(cl, "task_type", "x")
	}
	ex := h.executor("e1", "x", 1)
	for range done {
		id, v := h.task(ex)
		h.start(ex, id, v)
		h.accepted(ex, id, v, "succeeded")
	}
	open := h.submit(cl, "task_type", "nobody")
	for _, tc := range []struct {
		name string
		list []uint64
		want State
	}{
		{"short, all succeeded", done[:3], Pending},
		{"long, all succeeded, with repeats", append(append([]uint64(nil), done...), done[:5]...), Pending},
		{"long, one pending first", append([]uint64{open}, done...), Waiting},
		{"long, one pending last", append(append([]uint64(nil), done...), open), Waiting},
		{"long, one pending in the middle, repeated", append(append(append([]uint64(nil), done[:20]...), open, done[3], open), done[20:]...), Waiting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := h.submit(cl, "task_type", "y", "depends_on", joinIDs(tc.list))
			assert.Equal(t, tc.want, h.state(w))
			assert.Equal(t, firstOccurrences(tc.list), depsOf(h.get(w)))
		})
	}
	require.NoError(t, checkDependents(h.c))
	h.checkReplay()
}

// A task waiting on a long list is released when its last dependency
// succeeds, whatever the order they end in: the check that resumes where
// it stopped must not skip one still running.
func TestCore_DependsOnLongListReleasedByTheLastToSucceed(t *testing.T) {
	const n = 3 * shortDeps
	orders := map[string]func(i int) int{
		"in order":     func(i int) int { return i },
		"first last":   func(i int) int { return (i + 1) % n },
		"reverse":      func(i int) int { return n - 1 - i },
		"interleaved":  func(i int) int { return (i * 7) % n },
		"middle first": func(i int) int { return (i + n/2) % n },
	}
	for name, order := range orders {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			cl := h.client()
			deps := make([]uint64, n)
			for i := range deps {
				deps[i] = h.submit(cl, "task_type", "x")
			}
			w := h.submit(cl, "task_type", "y", "depends_on", joinIDs(deps)+","+itoa(deps[0]))
			ex := h.executor("e1", "x", n)
			vers := map[uint64]uint64{}
			for range n {
				id, v := h.task(ex)
				h.start(ex, id, v)
				vers[id] = v
			}
			for i := range n {
				id := deps[order(i)]
				require.Equal(t, Waiting, h.state(w), "before end %d (task %d)", i+1, id)
				h.accepted(ex, id, vers[id], "succeeded")
			}
			assert.Equal(t, Pending, h.state(w))
			assert.Empty(t, h.c.depsMet)
			h.checkReplay()
		})
	}
}

// With one old task holding the table's first chunk in place, the
// directory grows with every id issued; the marks of a long list must
// not stay behind at its far end (they did, 128 bytes a chunk index).
func TestCore_LongListFarFromAPinnedFirstChunkKeepsNoMarks(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	pinned := h.submit(cl, "task_type", "nobody")
	for range 3 {
		h.c.SkipIDs(2 * keptIndexes * chunkSize)
		p := pendingTasks(h, cl, shortDeps+1)
		w := h.submit(cl, "task_type", "y", "depends_on", joinIDs(p))
		assert.Equal(t, Waiting, h.state(w))
		requireMarksClear(t, h.c)
	}
	assert.Equal(t, Pending, h.state(pinned))
}

package core

import (
	"fmt"
	"maps"
	"slices"

	"github.com/apollo11/apollo11/snapshot"
)

// Runs in an incremental snapshot. Each run is an entry keyed
// snapshot.RunKeys plus its id, in ranges as tasks are, so that a
// snapshot writes the runs that changed, not every run kept. A run
// changed when its pointer did, as runs are copied on write (mutRun).

// isRunKey reports whether a part's key is a run's.
func isRunKey(key uint64) bool { return key >= snapshot.RunKeys }

// runPair is a run now and at the snapshot before (either nil).
type runPair struct{ now, was *run }

// runPairs calls fn for every run id of cur or prev from lo up, in id
// order, until fn returns false. Both are in ascending id.
func runPairs(cur, prev []*run, lo uint64, fn func(id uint64, p runPair) bool) {
	byID := func(r *run, id uint64) int {
		switch {
		case r.id < id:
			return -1
		case r.id > id:
			return 1
		}
		return 0
	}
	i, _ := slices.BinarySearchFunc(cur, lo, byID)
	j, _ := slices.BinarySearchFunc(prev, lo, byID)
	for i < len(cur) || j < len(prev) {
		var id uint64
		var p runPair
		switch {
		case j == len(prev) || (i < len(cur) && cur[i].id < prev[j].id):
			id, p.now = cur[i].id, cur[i]
			i++
		case i == len(cur) || prev[j].id < cur[i].id:
			id, p.was = prev[j].id, prev[j]
			j++
		default:
			id, p.now, p.was = cur[i].id, cur[i], prev[j]
			i++
			j++
		}
		if !fn(id, p) {
			return
		}
	}
}

func (d *Changes) prevRuns() []*run {
	if d.prev == nil {
		return nil
	}
	return d.prev.runs.runs
}

// runRanges reports the ranges of runs, after the tasks' (Ranges).
func (d *Changes) runRanges(fn func(r uint64, live int, changed, settled bool)) {
	first := snapshot.RunKeys >> d.bits
	var k uint64 // the range of runs being counted
	live, changed, any := 0, false, false
	flush := func() {
		if any {
			// A run may change until it ends, and a range of runs
			// is not tracked per run: settled only while unchanged.
			fn(first|k, live, changed, !changed && (k+1)<<d.bits <= d.cur.runs.next)
		}
	}
	runPairs(d.cur.runs.runs, d.prevRuns(), 0, func(id uint64, p runPair) bool {
		if id>>d.bits != k || !any {
			flush()
			k, live, changed, any = id>>d.bits, 0, false, true
		}
		if p.now != nil {
			live++
		}
		changed = changed || p.now != p.was
		return true
	})
	flush()
}

// writeRunRange streams the runs of range r, as WriteRange does tasks.
func (d *Changes) writeRunRange(r uint64, full bool, put func(key uint64, p []byte) error, drop func(key uint64) error) error {
	lo := (r &^ (snapshot.RunKeys >> d.bits)) << d.bits
	hi := lo + 1<<d.bits
	var prev []*run
	if !full {
		prev = d.prevRuns()
	}
	var buf []byte
	var err error
	runPairs(d.cur.runs.runs, prev, lo, func(id uint64, p runPair) bool {
		if id >= hi {
			return false
		}
		switch {
		case p.now != nil && p.now != p.was:
			buf = appendRecord(buf[:0], &record{kind: snapRun, run: &runRec{snap: p.now}})
			err = put(snapshot.RunKeys|id, buf)
		case p.now == nil:
			err = drop(snapshot.RunKeys | id)
		}
		return err == nil
	})
	return err
}

// runFloor returns the lowest key range r of runs holds (its end when none).
func (d *Changes) runFloor(r uint64) uint64 {
	lo := (r &^ (snapshot.RunKeys >> d.bits)) << d.bits
	floor := (r + 1) << d.bits
	runPairs(d.cur.runs.runs, nil, lo, func(id uint64, p runPair) bool {
		if id < lo+1<<d.bits {
			floor = snapshot.RunKeys | id
		}
		return false
	})
	return floor
}

// decodeRunEntry decodes the run entry keyed key of a snapshot part into r.
func decodeRunEntry(key uint64, payload []byte, r *record, names *interner) error {
	if err := decodeRecordNames(payload, r, names); err != nil {
		return err
	}
	if r.kind != snapRun || r.run.snap.id != key&^snapshot.RunKeys {
		id := uint64(0)
		if r.kind == snapRun {
			id = r.run.snap.id
		}
		return fmt.Errorf("%w: %s entry (run %d) in a snapshot part, keyed run %d", ErrCorrupt, r.kind, id, key&^snapshot.RunKeys)
	}
	return nil
}

// putRun keeps a run entry of a part in place of an older part's, until
// the tasks are loaded (finishRunsLoad).
func (c *Core) putRun(r *record) {
	c.loading = true
	c.runs.loaded[r.run.snap.id] = r.run.snap
}

// dropLoadedRun forgets a run loaded from an older part: a newer part
// says it is gone.
func (c *Core) dropLoadedRun(key uint64) {
	c.loading = true
	delete(c.runs.loaded, key&^snapshot.RunKeys)
}

// loadRun keeps a snapshot's run until its tasks are loaded (finishLoad).
// Manifests before runs had parts hold the runs among their head entries.
func (c *Core) loadRun(r *record) error {
	switch r.kind {
	case snapRunMeta:
		c.runs.nextID = max(c.runs.nextID, r.nextID)
	case snapRun:
		s := r.run.snap
		if s.id == 0 || c.runs.byID[s.id] != nil || c.runs.loaded[s.id] != nil {
			return errRunCorrupt("snapshot run %d twice", s.id)
		}
		c.runs.loaded[s.id] = s
	}
	return nil
}

// finishRunsLoad indexes the runs a snapshot held, in id order, once its
// tasks are in.
func (c *Core) finishRunsLoad() {
	for _, id := range slices.Sorted(maps.Keys(c.runs.loaded)) {
		c.addRun(c.runs.loaded[id])
	}
	clear(c.runs.loaded)
}

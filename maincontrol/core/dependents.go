package core

// dependents maps a task that has not ended to the waiting tasks that
// depend on it, in the order they were submitted: that order is the order
// they are released or cancelled in when it ends (followDependents).
//
// A waiting task can end before its dependencies do (a client cancels it,
// or another dependency fails). Its entries in the lists of its other
// dependencies then go stale: they are skipped when those end, but until
// then they would hold memory, and a client that submits and cancels a task
// depending on many long-lived ones grew the lists without bound while
// retention forgot the tasks themselves. So each list counts its stale
// entries and is compacted once they are more than half of it: memory stays
// within twice the live entries, and the compaction's scan is paid for by
// the ends that made at least half of it stale, so cancelling every
// dependent of one huge list stays linear.
type dependents map[uint64]depList

type depList struct {
	ids   []uint64
	stale int // entries of tasks that ended while waiting
}

// add records that task id waits for d.
func (ds dependents) add(d, id uint64) {
	l := ds[d]
	l.ids = append(l.ids, id)
	ds[d] = l
}

// take removes and returns d's list, stale entries included (the caller
// skips tasks no longer waiting).
func (ds dependents) take(d uint64) []uint64 {
	if len(ds) == 0 { // most tasks have none: skip the map operations
		return nil
	}
	l, ok := ds[d]
	if !ok {
		return nil
	}
	delete(ds, d)
	return l.ids
}

// ended accounts for a waiting task that ended: each of its dependencies
// that has not ended still lists it. waiting reports whether a task id
// still waits, for compacting.
func (ds dependents) ended(deps []uint64, waiting func(uint64) bool) {
	if len(ds) == 0 {
		return
	}
	for _, d := range deps {
		l, ok := ds[d]
		if !ok { // d ended (or was never waited for: it had ended at submit)
			continue
		}
		if l.stale++; 2*l.stale <= len(l.ids) {
			ds[d] = l
			continue
		}
		live := l.ids[:0]
		for _, id := range l.ids {
			if waiting(id) {
				live = append(live, id)
			}
		}
		switch {
		case len(live) == 0:
			delete(ds, d)
			continue
		case cap(live) > 4*len(live) && cap(live) > 16:
			// A list that was long and is now mostly gone gives its
			// array back, so memory follows the tasks still waiting.
			live = append([]uint64(nil), live...)
		}
		ds[d] = depList{ids: live}
	}
}

package core

// dependents maps a task that has not ended to the waiting tasks that
// depend on it, in the order they were submitted. When it ends, they are
// released or cancelled in that order (followDependents).
//
// A waiting task can end before its dependencies do. A client may cancel
// it, or another dependency may fail. Its entries in the lists of its
// other dependencies then go stale. They are skipped when those end, but
// until then they hold memory. A client that submits and cancels tasks
// depending on long-lived ones grew the lists without bound, while
// retention forgot the tasks themselves. So each list counts its stale
// entries, and is compacted once they are more than half of it. Memory
// stays within twice the live entries. The ends that made half of it
// stale pay for the compaction's scan. So cancelling every dependent of
// one huge list stays linear.
//
// Most dependencies have one dependent, in a chain or a pipeline's fan-in.
// One submit may name 100,000 of them. A map from each to a slice of its
// own cost about 70 bytes and a heap object per dependency. The collector
// scanned them all, and hashing took most of such a submit's CPU. So the
// index follows the task table, with a head per task. Heads come in
// blocks of chunkSize consecutive ids (8 KiB), found by array index. A
// block is made when one of its tasks first gets a dependent, and freed
// with its last. A head is the id of the one dependent, or from the
// second on, the index of a list in lists. However scattered the
// dependencies, a block is a seventeenth of the table chunk (136 KiB)
// with the same ids. So the blocks add at most that to the table.
type dependents struct {
	blocks map[uint64]*depBlock // by chunk number (id >> chunkBits)
	// last and lastN are the block of the latest lookup and its number.
	// The ids of a list come in runs.
	last  *depBlock
	lastN uint64
	lists []depList // lists of two dependents or more, by index
	free  []uint64  // indexes of unused entries of lists
	n     int       // tasks with dependents
}

// depBlock holds the heads of chunkSize consecutive ids.
type depBlock struct {
	heads [chunkSize]uint64
	used  int // heads not 0
}

// A head is 0 for no dependent, the id of the only dependent, or listHead
// plus an index in lists. A dependent whose id has listHead's bit goes in
// a list even alone. No live id has it, as ids grow by one from 1.
const listHead = 1 << 63

type depList struct {
	ids   []uint64
	stale int // entries of tasks that ended while waiting
}

// empty reports whether no task has dependents. Most cores, and the ends
// of most tasks, then need no lookup.
func (ds *dependents) empty() bool { return ds.n == 0 }

// len returns the number of tasks with dependents.
func (ds *dependents) len() int { return ds.n }

// block returns the block of id, made when make is set, else nil if none.
func (ds *dependents) block(id uint64, make bool) *depBlock {
	n := id >> chunkBits
	if ds.last != nil && ds.lastN == n {
		return ds.last
	}
	b := ds.blocks[n]
	if b == nil {
		if !make {
			return nil
		}
		if ds.blocks == nil {
			ds.blocks = map[uint64]*depBlock{}
		}
		b = new(depBlock)
		ds.blocks[n] = b
	}
	ds.last, ds.lastN = b, n
	return b
}

// set changes d's head in b to h. It keeps the counts, and frees b with
// its last head.
func (ds *dependents) set(b *depBlock, d, h uint64) {
	p := &b.heads[d&(chunkSize-1)]
	switch {
	case *p == 0 && h != 0:
		b.used++
		ds.n++
	case *p != 0 && h == 0:
		b.used--
		ds.n--
	}
	*p = h
	if b.used == 0 {
		n := d >> chunkBits
		delete(ds.blocks, n)
		if ds.lastN == n {
			ds.last = nil
		}
	}
}

// newList stores l in lists and returns its head.
func (ds *dependents) newList(l depList) uint64 {
	if k := len(ds.free); k > 0 {
		i := ds.free[k-1]
		ds.free = ds.free[:k-1]
		ds.lists[i] = l
		return listHead | i
	}
	ds.lists = append(ds.lists, l)
	return listHead | uint64(len(ds.lists)-1)
}

// freeList gives back the list of head h.
func (ds *dependents) freeList(h uint64) {
	i := h &^ listHead
	ds.lists[i] = depList{}
	ds.free = append(ds.free, i)
}

// add records that task id waits for d.
func (ds *dependents) add(d, id uint64) {
	b := ds.block(d, true)
	switch h := b.heads[d&(chunkSize-1)]; {
	case h == 0 && id&listHead == 0:
		ds.set(b, d, id)
	case h == 0:
		ds.set(b, d, ds.newList(depList{ids: []uint64{id}}))
	case h&listHead == 0:
		b.heads[d&(chunkSize-1)] = ds.newList(depList{ids: []uint64{h, id}})
	default:
		l := &ds.lists[h&^listHead]
		l.ids = append(l.ids, id)
	}
}

// take removes d's dependents and appends them to dst, with the stale
// entries. The caller skips tasks no longer waiting.
func (ds *dependents) take(d uint64, dst []uint64) []uint64 {
	if ds.n == 0 { // most tasks have none: skip the lookup, and the call (inlined)
		return dst
	}
	return ds.takeSome(d, dst)
}

func (ds *dependents) takeSome(d uint64, dst []uint64) []uint64 {
	b := ds.block(d, false)
	if b == nil {
		return dst
	}
	switch h := b.heads[d&(chunkSize-1)]; {
	case h == 0:
		return dst
	case h&listHead == 0:
		dst = append(dst, h)
	default:
		dst = append(dst, ds.lists[h&^listHead].ids...)
		ds.freeList(h)
	}
	ds.set(b, d, 0)
	return dst
}

// ended accounts for a waiting task that ended and depended on d. If d
// has not ended, its dependents still list the task. waiting reports
// whether a task id still waits, for compacting.
func (ds *dependents) ended(d uint64, waiting func(uint64) bool) {
	if ds.n == 0 {
		return
	}
	b := ds.block(d, false)
	if b == nil {
		return
	}
	h := b.heads[d&(chunkSize-1)]
	switch {
	case h == 0: // d ended (or was never waited for: it had ended at submit)
		return
	case h&listHead == 0: // a list of one: compacted at once, as below
		if !waiting(h) {
			ds.set(b, d, 0)
		}
		return
	}
	l := &ds.lists[h&^listHead]
	if l.stale++; 2*l.stale <= len(l.ids) {
		return
	}
	live := l.ids[:0]
	for _, id := range l.ids {
		if waiting(id) {
			live = append(live, id)
		}
	}
	switch {
	case len(live) == 0:
		ds.freeList(h)
		ds.set(b, d, 0)
		return
	case len(live) == 1 && live[0]&listHead == 0:
		ds.freeList(h)
		b.heads[d&(chunkSize-1)] = live[0]
		return
	case cap(live) > 4*len(live) && cap(live) > 16:
		// A list that was long and is now mostly gone gives its
		// array back, so memory follows the tasks still waiting.
		live = append([]uint64(nil), live...)
	}
	*l = depList{ids: live}
}

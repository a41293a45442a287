package core

// depMarks deduplicates a long depends_on list with a bit per task of the
// table, so that a list naming 100,000 tasks costs a bit test each rather
// than a map of its own: the map, grown by doubling as the list was read,
// made the larger share of such a submit's CPU and several MB of garbage
// (h11-exhaustion, item 8). Only known tasks are marked: a list that names
// an unknown id is refused (knownDeps) before its ids are used.
//
// The bits are kept outside the table's chunks, which snapshots share, and
// are all clear between two lists: whoever marks an id unmarks it before
// the submit returns. A set of bits is kept per chunk index of the table's
// directory once used (128 bytes beside a chunk's 136 KiB), so the marks
// never outgrow the directory they follow.
type depMarks struct {
	dir []*[chunkSize / 64]uint64 // by chunk index in the table's directory
}

// mark marks the task in slot of the table's chunk ci, and reports
// whether it was marked already.
func (m *depMarks) mark(ci int, slot uint64) (was bool) {
	for ci >= len(m.dir) {
		m.dir = append(m.dir, nil)
	}
	bs := m.dir[ci]
	if bs == nil {
		bs = new([chunkSize / 64]uint64)
		m.dir[ci] = bs
	}
	w, bit := &bs[slot/64], uint64(1)<<(slot%64)
	was = *w&bit != 0
	*w |= bit
	return was
}

// unmark clears what mark set.
func (m *depMarks) unmark(ci int, slot uint64) {
	m.dir[ci][slot/64] &^= 1 << (slot % 64)
}

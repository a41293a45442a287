package core

// depMarks deduplicates a long depends_on list with a bit per task of the
// table, so that a list naming 100,000 tasks costs a bit test each rather
// than a map of its own: the map, grown by doubling as the list was read,
// made the larger share of such a submit's CPU and several MB of garbage
// (h11-exhaustion, item 8). Only known tasks are marked: a list that names
// an unknown id is refused (knownDeps) before its ids are used.
//
// The bits are kept outside the table's chunks, which snapshots share, and
// only while one list is read: a set of bits (128 bytes) per chunk index of
// the table's directory the list names, all dropped by release once it is
// read. Kept from list to list, they followed every directory index ever
// used, and while one old task held the directory's first chunk in place
// (a pending task of a type no executor serves) that grew with every id
// issued, by about 128 bytes per 1,024 ids, for good.
type depMarks struct {
	dir []*[chunkSize / 64]uint64 // by chunk index in the table's directory
}

// keptIndexes is the most directory indexes whose (empty) slots release
// keeps for the next list: more is a directory far longer than usual,
// whose slots are made again when a list needs them.
const keptIndexes = 1024

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

// release drops every mark, and the sets that held them.
func (m *depMarks) release() {
	if cap(m.dir) > keptIndexes {
		m.dir = nil
		return
	}
	clear(m.dir)
	m.dir = m.dir[:0]
}

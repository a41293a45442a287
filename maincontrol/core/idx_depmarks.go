package core

// depMarks deduplicates a long depends_on list with a bit per task of the
// table. So a list naming 100,000 tasks costs a bit test each, not a map of
// its own. Such a map, grown by doubling as the list was read, took most
// of the submit's CPU and made several MB of garbage. Only known tasks are
// marked. A list that names an unknown id is refused (knownDeps) before
// its ids are used.
//
// The bits live outside the table's chunks, which snapshots share. They
// live only while one list is read. Each chunk index of the table's
// directory that the list names gets 128 bytes of bits. release drops them
// all once the list is read. Kept from list to list, they followed every
// directory index ever used. One old task can hold the directory's first
// chunk in place, such as a pending task of a type no executor serves.
// Then they grew with every id issued, by about 128 bytes per 1,024 ids,
// for good.
type depMarks struct {
	dir []*[chunkSize / 64]uint64 // by chunk index in the table's directory
}

// keptIndexes is the most directory indexes whose empty slots release
// keeps for the next list. More means a directory far longer than usual.
// Its slots are made again when a list needs them.
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

package core

import (
	"encoding/binary"
	"iter"
	"slices"
)

// depIDs is a task's depends_on list, deduplicated, in the order given.
// It is kept small, as a waiting task keeps it for as long as it waits.
// One submit may name 100,000 ids. Each id is stored as the signed varint
// of its difference from the one before, the first from 0. That is
// encoding/binary's varint, as records use. Ids submitted together are
// mostly close and ascending, so an id takes one to three bytes, not
// eight. Any list of uint64 comes back exactly, as the differences wrap
// like uint64 arithmetic. It is immutable, like the taskExtra that holds
// it.
//
// Records and snapshots carry the ids as before (record.deps). Only the
// table keeps them this way.
type depIDs struct {
	b []byte // the differences, as above
	n int    // the number of ids
}

// depCursor is a position in a depIDs. It holds the offset of the next id
// and the id before it.
type depCursor struct {
	off  int
	prev uint64
}

// encodeDeps returns ids as a depIDs.
func encodeDeps(ids []uint64) depIDs {
	if len(ids) == 0 { // most tasks: inlined, no call
		return depIDs{}
	}
	return encodeSome(ids)
}

func encodeSome(ids []uint64) depIDs {
	// It is sized exactly first, as the list lives while its task waits.
	var tmp [binary.MaxVarintLen64]byte
	size, prev := 0, uint64(0)
	for _, id := range ids {
		size += len(binary.AppendVarint(tmp[:0], int64(id-prev)))
		prev = id
	}
	b := make([]byte, 0, size)
	prev = 0
	for _, id := range ids {
		b = binary.AppendVarint(b, int64(id-prev))
		prev = id
	}
	return depIDs{b: b, n: len(ids)}
}

// len returns the number of ids.
func (d depIDs) len() int { return d.n }

// next returns the id at c and moves c past it. It returns false at the
// end.
func (d depIDs) next(c *depCursor) (uint64, bool) {
	if c.off >= len(d.b) {
		return 0, false
	}
	v, n := binary.Varint(d.b[c.off:])
	if n <= 0 { // never: encodeSome wrote whole varints
		return 0, false
	}
	c.off += n
	c.prev += uint64(v)
	return c.prev, true
}

// all yields the ids in order.
func (d depIDs) all() iter.Seq[uint64] {
	return func(yield func(uint64) bool) {
		var c depCursor
		for {
			id, ok := d.next(&c)
			if !ok || !yield(id) {
				return
			}
		}
	}
}

// appendTo appends the ids to dst.
func (d depIDs) appendTo(dst []uint64) []uint64 {
	dst = slices.Grow(dst, d.n)
	var c depCursor
	for {
		id, ok := d.next(&c)
		if !ok {
			return dst
		}
		dst = append(dst, id)
	}
}

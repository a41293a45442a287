package core

import (
	"iter"
	"slices"
	"unsafe"
)

// depIDs is a task's depends_on list, deduplicated, in the order given,
// kept small: a waiting task keeps it for as long as it waits, and one
// submit may name 100,000 ids (h11-exhaustion, item 8). Each id is stored
// as the zigzag varint of its difference from the one before it (the first
// from 0): ids submitted together are mostly close and ascending, so an id
// takes one to three bytes rather than eight, and any list of uint64 comes
// back exactly. It is immutable, like the taskExtra that holds it.
//
// Records and snapshots carry the ids as before (record.deps); only the
// table keeps them this way.
type depIDs struct {
	b string // the differences, as above
	n int    // the number of ids
}

// depCursor is a position in a depIDs: the offset of the next id and the
// id before it.
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
	size, prev := 0, uint64(0)
	for _, id := range ids {
		size += uvarintLen(zigzag(id - prev))
		prev = id
	}
	b := make([]byte, 0, size)
	prev = 0
	for _, id := range ids {
		for v := zigzag(id - prev); ; v >>= 7 {
			if v < 0x80 {
				b = append(b, byte(v))
				break
			}
			b = append(b, byte(v)|0x80)
		}
		prev = id
	}
	// b is never written again: the string may share its bytes.
	return depIDs{b: unsafe.String(unsafe.SliceData(b), len(b)), n: len(ids)}
}

// zigzag maps the difference d (two's complement) to a small number when
// it is small either way.
func zigzag(d uint64) uint64 { return d<<1 ^ uint64(int64(d)>>63) }

func unzigzag(v uint64) uint64 { return v>>1 ^ -(v & 1) }

func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// len returns the number of ids.
func (d depIDs) len() int { return d.n }

// next returns the id at c and moves c past it; false at the end.
func (d depIDs) next(c *depCursor) (uint64, bool) {
	if c.off >= len(d.b) {
		return 0, false
	}
	var v uint64
	for shift := uint(0); ; shift += 7 {
		x := d.b[c.off]
		c.off++
		v |= uint64(x&0x7f) << shift
		if x < 0x80 {
			break
		}
	}
	c.prev += unzigzag(v)
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

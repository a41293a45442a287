package core

import (
	"iter"
	"math/bits"
)

// assignments holds an executor's dispatches by task id. Every task passes
// through it at dispatch and end, and is looked up at started. A Go map
// there took a tenth of the core's cycle. Ids are dense integers, so a
// multiplicative hash spreads them well. An open-addressing table with
// linear probing and backward-shift deletion does the same work in a few
// instructions, with no tombstones to clean up.
type assignments struct {
	slots []assignSlot // len is 0 or a power of two
	n     int
	shift uint8 // 64 - log2(len(slots))
}

type assignSlot struct {
	id   uint64
	a    assignment
	used bool
}

const (
	minAssignSlots  = 8
	keepAssignSlots = 1024 // 24 KiB
)

func (s *assignments) len() int { return s.n }

// home is the slot where id's probe starts.
func (s *assignments) home(id uint64) int {
	return int((id * 0x9e3779b97f4a7c15) >> s.shift)
}

func (s *assignments) find(id uint64) int {
	if s.n == 0 {
		return -1
	}
	mask := len(s.slots) - 1
	for i := s.home(id); ; i = (i + 1) & mask {
		sl := &s.slots[i]
		if !sl.used {
			return -1
		}
		if sl.id == id {
			return i
		}
	}
}

// get returns id's assignment.
func (s *assignments) get(id uint64) (assignment, bool) {
	if i := s.find(id); i >= 0 {
		return s.slots[i].a, true
	}
	return assignment{}, false
}

// ref returns a pointer to id's assignment, valid until the next set or
// del, or nil.
func (s *assignments) ref(id uint64) *assignment {
	if i := s.find(id); i >= 0 {
		return &s.slots[i].a
	}
	return nil
}

// set stores id's assignment, adding it or replacing the one there.
func (s *assignments) set(id uint64, a assignment) {
	if (s.n+1)*2 > len(s.slots) {
		s.resize(max(minAssignSlots, len(s.slots)*2))
	}
	mask := len(s.slots) - 1
	i := s.home(id)
	for ; s.slots[i].used; i = (i + 1) & mask {
		if s.slots[i].id == id {
			s.slots[i].a = a
			return
		}
	}
	s.slots[i] = assignSlot{id: id, a: a, used: true}
	s.n++
}

// del removes id and reports whether it was there. A large table shrinks
// when it is mostly empty. So an executor that once held many tasks does
// not keep their room. Below keepAssignSlots it keeps its size, because
// an executor's load swings between empty and full all the time.
func (s *assignments) del(id uint64) bool {
	i := s.find(id)
	if i < 0 {
		return false
	}
	// Backward shift pulls later entries of the run into the hole when
	// it lies on their probe path. So lookups never stop early.
	mask := len(s.slots) - 1
	for j := (i + 1) & mask; s.slots[j].used; j = (j + 1) & mask {
		h := s.home(s.slots[j].id)
		if (j-h)&mask >= (j-i)&mask {
			s.slots[i] = s.slots[j]
			i = j
		}
	}
	s.slots[i] = assignSlot{}
	s.n--
	if len(s.slots) > keepAssignSlots && s.n*8 < len(s.slots) {
		s.resize(len(s.slots) / 2)
	}
	return true
}

func (s *assignments) resize(size int) {
	old := s.slots
	s.slots = make([]assignSlot, size)
	s.shift = uint8(64 - bits.TrailingZeros(uint(size)))
	s.n = 0
	for i := range old {
		if old[i].used {
			s.set(old[i].id, old[i].a)
		}
	}
}

// all yields each assignment with a pointer through which it may be
// changed. The loop may not add or remove entries. Collect ids first
// (ids) to do that.
func (s *assignments) all() iter.Seq2[uint64, *assignment] {
	return func(yield func(uint64, *assignment) bool) {
		for i := range s.slots {
			if sl := &s.slots[i]; sl.used && !yield(sl.id, &sl.a) {
				return
			}
		}
	}
}

// ids appends every task id to dst.
func (s *assignments) ids(dst []uint64) []uint64 {
	for i := range s.slots {
		if s.slots[i].used {
			dst = append(dst, s.slots[i].id)
		}
	}
	return dst
}

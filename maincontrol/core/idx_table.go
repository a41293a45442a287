package core

import "math/bits"

// The task table maps ids to tasks. Ids only grow, so tasks sit in chunks
// of chunkSize consecutive ids. The directory is a slice of chunk pointers.
// Chunks are copy-on-write across snapshots. Freeze copies the directory
// and starts a new generation. The first change to a chunk of an older
// generation clones it first, so a frozen snapshot never sees a change.

const (
	chunkBits = 10
	chunkSize = 1 << chunkBits
)

type chunk struct {
	gen    uint32
	live   int32
	states [NumStates + 1]int32 // tasks per state, so scans can skip chunks
	// inState has a bit per slot for each state. A scan for one state then
	// reads 128 bytes of a chunk rather than its 136 KiB of tasks. Otherwise
	// `list state=failed` over a large table with a few failed tasks in every
	// chunk costs milliseconds each. A pipelined batch of them would stall the
	// event loop for seconds.
	inState [NumStates + 1][chunkSize / 64]uint64
	slots   [chunkSize]task // id 0 marks an empty slot
}

// ended counts the chunk's tasks in a terminal state.
func (ch *chunk) ended() int {
	n := 0
	for s := State(1); s <= NumStates; s++ {
		if s.Terminal() {
			n += int(ch.states[s])
		}
	}
	return n
}

func (ch *chunk) mark(slot uint64, s State)   { ch.inState[s][slot/64] |= 1 << (slot % 64) }
func (ch *chunk) unmark(slot uint64, s State) { ch.inState[s][slot/64] &^= 1 << (slot % 64) }

type table struct {
	first  uint64   // chunk number of chunks[0]
	chunks []*chunk // nil for chunks with no task left
	gen    uint32
	count  int
	// spare holds chunks emptied by remove and in no snapshot, all zero,
	// for the next chunks needed. Under steady load retention empties one
	// chunk for every one that fills. A chunk is 136 KiB that the allocator
	// would otherwise zero and the collector sweep each time. A tick's
	// retention can empty several at once, so a few are kept.
	spare []*chunk
}

// maxSpareChunks bounds the memory the spare chunks keep (544 KiB).
const maxSpareChunks = 4

func (tb *table) chunkOf(id uint64) (*chunk, int) {
	i := id>>chunkBits - tb.first // wraps past len below first: one test
	if i >= uint64(len(tb.chunks)) {
		return nil, -1
	}
	return tb.chunks[i], int(i)
}

// get returns the task with this id for reading, or nil. The pointer may
// point into a frozen chunk, so never write through it (use mut).
func (tb *table) get(id uint64) *task {
	ch, _ := tb.chunkOf(id)
	if ch == nil {
		return nil
	}
	t := &ch.slots[id&(chunkSize-1)]
	if t.id != id || id == 0 { // id 0 marks an empty slot: no task has it
		return nil
	}
	return t
}

// find is get that also returns the index of the task's chunk in the
// directory, valid until the table next changes.
func (tb *table) find(id uint64) (*task, int) {
	ch, i := tb.chunkOf(id)
	if ch == nil {
		return nil, -1
	}
	t := &ch.slots[id&(chunkSize-1)]
	if t.id != id || id == 0 {
		return nil, -1
	}
	return t, i
}

// chunkIndex is find's chunk index for an id known to be in the table,
// computed without reading its task.
func (tb *table) chunkIndex(id uint64) int { return int(id>>chunkBits - tb.first) }

// mut returns the task for writing, cloning its chunk first if a snapshot
// still holds it. The pointer is valid until the next Freeze.
func (tb *table) mut(id uint64) *task {
	t, _ := tb.mutIn(id)
	return t
}

// mutIn is mut that also returns the task's chunk.
func (tb *table) mutIn(id uint64) (*task, *chunk) {
	ch, i := tb.chunkOf(id)
	if ch == nil {
		return nil, nil
	}
	t := &ch.slots[id&(chunkSize-1)]
	if t.id != id || id == 0 {
		return nil, nil
	}
	if ch.gen != tb.gen {
		ch = tb.clone(i)
		t = &ch.slots[id&(chunkSize-1)]
	}
	return t, ch
}

// newChunk returns an empty chunk of the current generation.
func (tb *table) newChunk() *chunk {
	var ch *chunk
	if n := len(tb.spare); n > 0 {
		ch, tb.spare[n-1] = tb.spare[n-1], nil
		tb.spare = tb.spare[:n-1]
	} else {
		ch = new(chunk)
	}
	ch.gen = tb.gen
	return ch
}

// trimSpare drops the spare chunks past maxSpareChunks. A restart's
// batches make chunks ready ahead (LoadBatch), a few more than it uses.
func (tb *table) trimSpare() {
	if len(tb.spare) > maxSpareChunks {
		clear(tb.spare[maxSpareChunks:])
		tb.spare = tb.spare[:maxSpareChunks]
	}
}

func (tb *table) clone(i int) *chunk {
	c := tb.newChunk()
	*c = *tb.chunks[i]
	c.gen = tb.gen
	tb.chunks[i] = c
	return c
}

// insert adds t, whose id must not be in the table. It returns the stored
// copy.
func (tb *table) insert(t task) *task {
	n := t.id >> chunkBits
	if len(tb.chunks) == 0 {
		tb.first = n
	}
	for n < tb.first { // only on restore of sparse ids: grow downwards
		tb.chunks = append([]*chunk{nil}, tb.chunks...)
		tb.first--
	}
	for n-tb.first >= uint64(len(tb.chunks)) {
		tb.chunks = append(tb.chunks, nil)
	}
	i := int(n - tb.first)
	ch := tb.chunks[i]
	switch {
	case ch == nil:
		ch = tb.newChunk()
		tb.chunks[i] = ch
	case ch.gen != tb.gen:
		ch = tb.clone(i)
	}
	slot := &ch.slots[t.id&(chunkSize-1)]
	*slot = t
	ch.live++
	ch.states[t.state]++
	ch.mark(t.id&(chunkSize-1), t.state)
	tb.count++
	return slot
}

// setState moves the task with this id to state s, keeping the chunk's
// per-state counts. It returns the task for writing, as mut does, and the
// state it left.
func (tb *table) setState(id uint64, s State) (t *task, from State) {
	t, ch := tb.mutIn(id)
	from = t.state
	ch.states[from]--
	ch.states[s]++
	ch.unmark(id&(chunkSize-1), from)
	ch.mark(id&(chunkSize-1), s)
	t.state = s
	return t, from
}

// remove forgets the task with this id and frees chunks left empty.
func (tb *table) remove(id uint64) {
	t := tb.mut(id)
	if t == nil {
		return
	}
	ch, i := tb.chunkOf(id)
	ch.states[t.state]--
	ch.unmark(id&(chunkSize-1), t.state)
	*t = task{}
	ch.live--
	tb.count--
	if ch.live == 0 {
		tb.chunks[i] = nil
		// mut above cloned the chunk if a snapshot held it, so none holds
		// this one, and every slot of it was zeroed on its way out.
		if len(tb.spare) < maxSpareChunks {
			tb.spare = append(tb.spare, ch)
		}
		for len(tb.chunks) > 0 && tb.chunks[0] == nil {
			tb.chunks = tb.chunks[1:]
			tb.first++
		}
		for len(tb.chunks) > 0 && tb.chunks[len(tb.chunks)-1] == nil {
			tb.chunks = tb.chunks[:len(tb.chunks)-1]
		}
	}
}

// frozenTable is a read-only view of the table at one instant. nums
// holds the chunk number (id >> chunkBits) of each chunk. A chunk that
// changed after a freeze is a new pointer (copy-on-write), so comparing
// two views' pointers finds the chunks changed between them.
type frozenTable struct {
	chunks []*chunk
	nums   []uint64
}

// freeze returns a view that later changes do not affect.
func (tb *table) freeze() frozenTable {
	f := frozenTable{chunks: make([]*chunk, 0, len(tb.chunks)), nums: make([]uint64, 0, len(tb.chunks))}
	for i, ch := range tb.chunks {
		if ch != nil {
			f.chunks = append(f.chunks, ch)
			f.nums = append(f.nums, tb.first+uint64(i))
		}
	}
	tb.gen++
	return f
}

// each calls fn for every task in id order until fn returns false.
func (f frozenTable) each(fn func(t *task) bool) {
	for _, ch := range f.chunks {
		for i := range ch.slots {
			if t := &ch.slots[i]; t.id != 0 {
				if !fn(t) {
					return
				}
			}
		}
	}
}

// scan calls fn, in ascending id order, for tasks with id > after in state
// s (0 for any state). It skips chunks with none, until fn returns false.
func (tb *table) scan(after uint64, s State, fn func(t *task) bool) {
	start := 0
	if n := (after + 1) >> chunkBits; n > tb.first {
		start = int(n - tb.first)
	}
	for ci := start; ci < len(tb.chunks); ci++ {
		ch := tb.chunks[ci]
		if ch == nil || ch.live == 0 || (s != 0 && ch.states[s] == 0) {
			continue
		}
		if s != 0 {
			for w, word := range ch.inState[s] {
				for ; word != 0; word &= word - 1 {
					t := &ch.slots[w*64+bits.TrailingZeros64(word)]
					if t.id > after && !fn(t) {
						return
					}
				}
			}
			continue
		}
		for i := range ch.slots {
			t := &ch.slots[i]
			if t.id == 0 || t.id <= after || (s != 0 && t.state != s) {
				continue
			}
			if !fn(t) {
				return
			}
		}
	}
}

// scanDesc calls fn, in descending id order, for tasks with id < before
// (0 for any id) in state s (0 for any state). It skips chunks with none,
// until fn returns false.
func (tb *table) scanDesc(before uint64, s State, fn func(t *task) bool) {
	end := len(tb.chunks) - 1
	if before != 0 {
		n := (before - 1) >> chunkBits
		if n < tb.first {
			return
		}
		if i := n - tb.first; i < uint64(len(tb.chunks)) {
			end = int(i)
		}
	}
	for ci := end; ci >= 0; ci-- {
		ch := tb.chunks[ci]
		if ch == nil || ch.live == 0 || (s != 0 && ch.states[s] == 0) {
			continue
		}
		if s != 0 {
			for w := len(ch.inState[s]) - 1; w >= 0; w-- {
				for word := ch.inState[s][w]; word != 0; {
					b := 63 - bits.LeadingZeros64(word)
					word &^= 1 << b
					t := &ch.slots[w*64+b]
					if (before == 0 || t.id < before) && !fn(t) {
						return
					}
				}
			}
			continue
		}
		for i := len(ch.slots) - 1; i >= 0; i-- {
			t := &ch.slots[i]
			if t.id == 0 || (before != 0 && t.id >= before) {
				continue
			}
			if !fn(t) {
				return
			}
		}
	}
}

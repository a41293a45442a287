package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of the chunked copy-on-write task table.

func tableWith(ids ...uint64) *table {
	var tb table
	for _, id := range ids {
		tb.insert(task{id: id, state: Pending})
	}
	return &tb
}

func frozenIDs(f frozenTable) []uint64 {
	var ids []uint64
	f.each(func(t *task) bool {
		ids = append(ids, t.id)
		return true
	})
	return ids
}

func scanIDs(tb *table, after uint64, s State) []uint64 {
	var ids []uint64
	tb.scan(after, s, func(t *task) bool {
		ids = append(ids, t.id)
		return true
	})
	return ids
}

func TestTable_GetInsertRemove(t *testing.T) {
	tb := tableWith(1, 2, chunkSize-1, chunkSize, 3*chunkSize+5)
	assert.Equal(t, 5, tb.count)
	for _, id := range []uint64{1, 2, chunkSize - 1, chunkSize, 3*chunkSize + 5} {
		require.NotNil(t, tb.get(id), "%d", id)
		assert.Equal(t, id, tb.get(id).id)
	}
	for _, id := range []uint64{0, 3, chunkSize + 1, 2 * chunkSize, 3*chunkSize + 4, 100 * chunkSize, ^uint64(0)} {
		assert.Nil(t, tb.get(id), "%d", id)
		assert.Nil(t, tb.mut(id), "%d", id)
	}
	assert.Len(t, tb.chunks, 4)
	assert.Nil(t, tb.chunks[2], "no chunk where there is no task")
	tb.remove(2)
	tb.remove(2) // twice: no-op
	assert.Nil(t, tb.get(2))
	assert.Equal(t, 4, tb.count)
	assert.Equal(t, int32(2), tb.chunks[0].live)
	assert.Equal(t, int32(2), tb.chunks[0].states[Pending])
}

func TestTable_RemoveFreesChunks(t *testing.T) {
	var ids []uint64
	for id := uint64(1); id < 4*chunkSize; id++ {
		ids = append(ids, id)
	}
	tb := tableWith(ids...)
	require.Len(t, tb.chunks, 4)
	// Empty the second chunk: it is freed, the directory keeps its place.
	for id := uint64(chunkSize); id < 2*chunkSize; id++ {
		tb.remove(id)
	}
	assert.Nil(t, tb.chunks[1])
	assert.Len(t, tb.chunks, 4)
	// Empty the first: the directory drops the leading empty chunks.
	for id := uint64(1); id < chunkSize; id++ {
		tb.remove(id)
	}
	assert.Equal(t, uint64(2), tb.first)
	assert.Len(t, tb.chunks, 2)
	assert.NotNil(t, tb.get(2*chunkSize))
	// Empty the last: trailing empty chunks go too.
	for id := uint64(3 * chunkSize); id < 4*chunkSize; id++ {
		tb.remove(id)
	}
	assert.Len(t, tb.chunks, 1)
	assert.Equal(t, chunkSize, tb.count)
	for id := uint64(2 * chunkSize); id < 3*chunkSize; id++ {
		tb.remove(id)
	}
	assert.Empty(t, tb.chunks)
	assert.Zero(t, tb.count)
	// And it fills again from any id.
	tb.insert(task{id: 10 * chunkSize, state: Waiting})
	assert.Equal(t, uint64(10), tb.first)
	assert.NotNil(t, tb.get(10*chunkSize))
	// A restore of a lower id grows the directory downwards.
	tb.insert(task{id: 5, state: Waiting})
	assert.Equal(t, uint64(0), tb.first)
	assert.NotNil(t, tb.get(5))
	assert.NotNil(t, tb.get(10*chunkSize))
	assert.Equal(t, []uint64{5, 10 * chunkSize}, scanIDs(tb, 0, 0))
}

func TestTable_FreezeIsolation(t *testing.T) {
	tb := tableWith(1, 2, 3, chunkSize+1, 2*chunkSize+1)
	f := tb.freeze()
	want := []uint64{1, 2, 3, chunkSize + 1, 2*chunkSize + 1}
	require.Equal(t, want, frozenIDs(f))
	frozen0 := f.chunks[0]

	// Writes after the freeze copy the chunk first.
	m, from := tb.setState(1, Running)
	assert.Equal(t, Pending, from)
	m.version = 7
	assert.NotSame(t, frozen0, tb.chunks[0])
	assert.Equal(t, Running, tb.get(1).state)
	assert.Equal(t, Pending, frozen0.slots[1].state)
	assert.Equal(t, uint64(0), frozen0.slots[1].version)
	assert.Equal(t, int32(3), frozen0.states[Pending], "the frozen chunk's counts are unchanged")
	assert.Equal(t, int32(2), tb.chunks[0].states[Pending])
	// A second write to the same chunk does not copy again.
	c0 := tb.chunks[0]
	tb.mut(2).version = 1
	assert.Same(t, c0, tb.chunks[0])

	tb.remove(chunkSize + 1)             // a frozen chunk emptied
	tb.insert(task{id: 2*chunkSize + 2}) // an insert into a frozen chunk
	tb.insert(task{id: 5 * chunkSize})   // a new chunk
	assert.Equal(t, want, frozenIDs(f), "the frozen view does not change")
	for _, ch := range f.chunks {
		for i := range ch.slots {
			if ch.slots[i].id != 0 {
				assert.Equal(t, Pending, ch.slots[i].state)
				assert.Zero(t, ch.slots[i].version)
			}
		}
	}
	assert.Equal(t, []uint64{1, 2, 3, 2*chunkSize + 1, 2*chunkSize + 2, 5 * chunkSize}, scanIDs(tb, 0, 0))

	// A second freeze sees the new state; the first still the old.
	f2 := tb.freeze()
	tb.remove(1)
	assert.Equal(t, []uint64{1, 2, 3, 2*chunkSize + 1, 2*chunkSize + 2, 5 * chunkSize}, frozenIDs(f2))
	assert.Equal(t, want, frozenIDs(f))

	// each stops when asked.
	n := 0
	f.each(func(*task) bool { n++; return n < 2 })
	assert.Equal(t, 2, n)
}

func TestTable_Scan(t *testing.T) {
	var tb table
	states := map[uint64]State{}
	for id := uint64(1); id <= 5*chunkSize; id++ {
		s := Pending
		switch {
		case id%7 == 0:
			s = Running
		case id > 3*chunkSize && id < 4*chunkSize:
			s = Succeeded // a chunk with no pending task
		}
		tb.insert(task{id: id, state: s})
		states[id] = s
	}
	for id := uint64(2*chunkSize + 1); id < 3*chunkSize; id++ {
		tb.remove(id) // a hole
		delete(states, id)
	}
	want := func(after uint64, s State) []uint64 {
		var ids []uint64
		for id := after + 1; id > after && id <= 5*chunkSize; id++ {
			if st, ok := states[id]; ok && (s == 0 || st == s) {
				ids = append(ids, id)
			}
		}
		return ids
	}
	for _, after := range []uint64{0, 1, 6, 7, chunkSize - 1, chunkSize, 2*chunkSize + 3, 3 * chunkSize, 5*chunkSize - 1, 5 * chunkSize, 1 << 40, ^uint64(0)} {
		for _, s := range []State{0, Pending, Running, Succeeded, Failed} {
			assert.Equal(t, want(after, s), scanIDs(&tb, after, s), "after %d state %s", after, s)
		}
	}
	// scan stops when asked.
	var got []uint64
	tb.scan(0, Running, func(t *task) bool {
		got = append(got, t.id)
		return len(got) < 3
	})
	assert.Equal(t, []uint64{7, 14, 21}, got)
	// Per-chunk state counts match the slots.
	for _, ch := range tb.chunks {
		if ch == nil {
			continue
		}
		var counts [NumStates + 1]int32
		var live int32
		for i := range ch.slots {
			if ch.slots[i].id != 0 {
				counts[ch.slots[i].state]++
				live++
			}
		}
		assert.Equal(t, counts, ch.states)
		assert.Equal(t, live, ch.live)
	}
}

// TestTable_ReusesEmptiedChunk checks that a chunk emptied by remove
// serves the next chunk needed, empty, and never one a snapshot holds.
func TestTable_ReusesEmptiedChunk(t *testing.T) {
	var tb table
	for id := uint64(1); id < 2*chunkSize; id++ {
		tb.insert(task{id: id, state: Pending, version: id})
	}
	first := tb.chunks[0]
	for id := uint64(1); id < chunkSize; id++ {
		tb.remove(id)
	}
	require.Equal(t, []*chunk{first}, tb.spare, "the emptied chunk is kept")
	tb.insert(task{id: 2*chunkSize + 7, state: Running})
	assert.Same(t, first, tb.chunks[len(tb.chunks)-1], "and reused for the next new chunk")
	assert.Empty(t, tb.spare)
	assert.Equal(t, []uint64{2*chunkSize + 7}, scanIDs(&tb, 2*chunkSize-1, 0), "nothing of its old tasks shows")
	assert.Equal(t, int32(1), first.live)
	assert.Equal(t, int32(1), first.states[Running])
	assert.Zero(t, first.states[Pending])

	// Emptied after a freeze: the snapshot keeps its chunk; only the
	// private copy that remove made becomes the spare.
	f := tb.freeze()
	frozen := tb.chunks[0] // ids chunkSize .. 2*chunkSize-1
	for id := uint64(chunkSize); id < 2*chunkSize; id++ {
		tb.remove(id)
	}
	require.Len(t, tb.spare, 1)
	assert.NotSame(t, frozen, tb.spare[0])
	tb.insert(task{id: 4*chunkSize + 1, state: Pending})
	assert.Equal(t, chunkSize+1, len(frozenIDs(f)), "the snapshot still sees every task it froze")
	assert.Equal(t, uint64(chunkSize), frozen.slots[0].version)
	assert.Equal(t, []uint64{2*chunkSize + 7, 4*chunkSize + 1}, scanIDs(&tb, 0, 0))

	// Many chunks emptied at once: only a few are kept.
	for id := uint64(10 * chunkSize); id < 20*chunkSize; id++ {
		tb.insert(task{id: id, state: Pending})
	}
	for id := uint64(10 * chunkSize); id < 20*chunkSize; id++ {
		tb.remove(id)
	}
	assert.Len(t, tb.spare, maxSpareChunks)
}

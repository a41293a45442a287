package core

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// A range of tasks is settled once its ids are all taken and every task
// in it has ended, not while some wait in the queue: they will change,
// and a rewrite of the range then would be followed by another.
func TestSnapshot_RangeSettledOnceEnded(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	var ids []uint64
	for range chunkSize + 10 {
		ids = append(ids, h.submit(cl, "task_type", "a"))
	}
	settled := func(bits uint) map[uint64]bool {
		ch := h.c.Freeze().Since(nil, 0)
		ch.bits = bits
		got := map[uint64]bool{}
		ch.Ranges(func(r uint64, _ int, _, s bool) { got[r] = s })
		return got
	}
	require.False(t, settled(chunkBits)[0], "range 0 is all taken, but pending")
	require.False(t, settled(4)[0], "16 ids a range: range 0 is pending too")
	for _, id := range ids {
		if id < 16 {
			h.send(cl, "cancel", "req", "c", "task_id", strconv.FormatUint(id, 10))
			h.expect(cl, "cancelled")
		}
	}
	require.True(t, settled(4)[0], "16 ids a range: ids 1 - 15 ended")
	require.False(t, settled(4)[1], "16 ids a range: ids 16 - 31 pending")
	require.False(t, settled(chunkBits)[0])
	for _, id := range ids {
		if id >= 16 && id < chunkSize {
			h.send(cl, "cancel", "req", "c", "task_id", strconv.FormatUint(id, 10))
			h.expect(cl, "cancelled")
		}
	}
	s := settled(chunkBits)
	require.True(t, s[0], "every task of range 0 ended")
	require.False(t, s[1], "range 1 is neither all taken nor ended")
}

package core

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTimerHeap_Order(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	var h timerHeap
	var all []timer
	for round := range 50 {
		for range rnd.IntN(200) {
			tm := timer{at: rnd.Int64N(1000), id: rnd.Uint64N(50), ver: uint32(round)}
			h.add(tm)
			all = append(all, tm)
		}
		now := rnd.Int64N(1100)
		var got []timer
		for {
			tm, ok := h.popDue(now)
			if !ok {
				break
			}
			got = append(got, tm)
		}
		slices.SortStableFunc(all, func(a, b timer) int {
			return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.id, b.id))
		})
		n := 0
		for n < len(all) && all[n].at <= now {
			n++
		}
		require.Len(t, got, n, "round %d", round)
		for i := range got {
			require.Equal(t, all[i].at, got[i].at)
			require.Equal(t, all[i].id, got[i].id)
		}
		all = all[n:]
		require.Len(t, h, len(all))
	}
	_, ok := (&timerHeap{}).popDue(1 << 62)
	require.False(t, ok)
}

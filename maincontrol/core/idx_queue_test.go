package core

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFifo_MatchesModel drives a fifo and a plain slice with the same
// random pushes, pops and compactions, through many wrap-arounds, growths
// and drains, and checks they agree after every step.
func TestFifo_MatchesModel(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 8))
	var q fifo
	var model []qent
	next := uint64(1)
	for step := range 200_000 {
		switch op := rnd.IntN(10); {
		case op < 5 || len(model) == 0:
			e := qent{id: next, ver: uint64(step)}
			next++
			q.push(e)
			model = append(model, e)
		case op < 9:
			require.Equal(t, model[0], q.peek(), "step %d", step)
			require.Equal(t, model[0], q.pop(), "step %d", step)
			model = model[1:]
		default:
			// Drop odd ids, as if their tasks had left the queue.
			q.stale = q.n
			q.compact(func(e qent) bool { return e.id%2 == 0 })
			kept := model[:0:0]
			for _, e := range model {
				if e.id%2 == 0 || len(model) < 64 {
					kept = append(kept, e)
				}
			}
			model = kept
		}
		require.Equal(t, len(model), q.len(), "step %d", step)
		require.Zero(t, len(q.buf)&(len(q.buf)-1), "buffer length %d is a power of two", len(q.buf))
	}
	for _, e := range model {
		require.Equal(t, e, q.pop())
	}
	require.Zero(t, q.len())
}

// TestFifo_DrainKeepsWorkingBuffer checks what a drained queue keeps: the
// buffer of a working size, so refilling allocates nothing, but not the
// buffer of a burst beyond maxIdleQueue.
func TestFifo_DrainKeepsWorkingBuffer(t *testing.T) {
	for _, tc := range []struct {
		n    int
		kept bool
	}{{4096, true}, {maxIdleQueue, true}, {maxIdleQueue + 1, false}} {
		var q fifo
		for i := range tc.n {
			q.push(qent{id: uint64(i + 1)})
		}
		size := len(q.buf)
		for q.len() > 0 {
			q.pop()
		}
		if tc.kept {
			require.Len(t, q.buf, size, "%d entries", tc.n)
			allocs := testing.AllocsPerRun(10, func() {
				for i := range tc.n {
					q.push(qent{id: uint64(i + 1)})
				}
				for q.len() > 0 {
					q.pop()
				}
			})
			require.Zero(t, allocs, "refilling a drained queue of %d", tc.n)
		} else {
			require.Nil(t, q.buf, "%d entries", tc.n)
		}
	}
}

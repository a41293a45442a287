package core

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// The table must behave as a map through any mix of sets, deletes and
// lookups: growth, shrinking and the backward shift of deletion included.
// Ids come from small ranges so that probe runs collide and wrap.
func TestAssignments_MatchesMap(t *testing.T) {
	for _, span := range []uint64{16, 200, 5000} {
		r := rand.New(rand.NewPCG(span, 9))
		var s assignments
		want := map[uint64]assignment{}
		for step := range 200_000 {
			id := r.Uint64N(span)
			switch op := r.IntN(10); {
			case op < 5:
				a := assignment{ver: uint64(step), missed: uint8(step % 3), restored: step%2 == 0}
				s.set(id, a)
				want[id] = a
			case op < 9:
				_, had := want[id]
				require.Equal(t, had, s.del(id), "del %d", id)
				delete(want, id)
			default:
				got, ok := s.get(id)
				w, had := want[id]
				require.Equal(t, had, ok)
				require.Equal(t, w, got)
			}
			require.Equal(t, len(want), s.len())
			if step%1000 == 0 {
				checkAssignments(t, &s, want)
			}
		}
		checkAssignments(t, &s, want)
		// Drain in random order, through the shrinking steps.
		ids := slices.Collect(maps.Keys(want))
		r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		for i, id := range ids {
			require.True(t, s.del(id))
			delete(want, id)
			if i%97 == 0 {
				checkAssignments(t, &s, want)
			}
		}
		require.Equal(t, 0, s.len())
	}
}

func checkAssignments(t *testing.T, s *assignments, want map[uint64]assignment) {
	t.Helper()
	got := map[uint64]assignment{}
	for id, a := range s.all() {
		got[id] = *a
	}
	require.Equal(t, want, got)
	ids := s.ids(nil)
	slices.Sort(ids)
	require.Equal(t, slices.Sorted(maps.Keys(want)), ids)
	for id, a := range want {
		require.Equal(t, a, *s.ref(id))
	}
	require.Nil(t, s.ref(1<<40))
	// Room follows use: at most half full, and not mostly empty.
	require.LessOrEqual(t, 2*s.len(), len(s.slots))
	if len(s.slots) > keepAssignSlots {
		require.GreaterOrEqual(t, 8*s.len(), len(s.slots)/2)
	}
}

// Changes made through all and ref stay.
func TestAssignments_ChangeInPlace(t *testing.T) {
	var s assignments
	for id := uint64(1); id <= 100; id++ {
		s.set(id, assignment{ver: 1})
	}
	for _, a := range s.all() {
		a.missed++
	}
	s.ref(7).restored = true
	for id := uint64(1); id <= 100; id++ {
		a, ok := s.get(id)
		require.True(t, ok)
		require.Equal(t, assignment{ver: 1, missed: 1, restored: id == 7}, a)
	}
	// Stopping early works.
	n := 0
	for range s.all() {
		n++
		break
	}
	require.Equal(t, 1, n)
}

// An executor that once held many tasks gives the room back.
func TestAssignments_Shrinks(t *testing.T) {
	var s assignments
	for id := uint64(1); id <= 10_000; id++ {
		s.set(id, assignment{ver: 1})
	}
	big := len(s.slots)
	for id := uint64(1); id <= 10_000; id++ {
		require.True(t, s.del(id))
	}
	require.Equal(t, 0, s.len())
	require.Less(t, len(s.slots), big/8)
	require.GreaterOrEqual(t, len(s.slots), keepAssignSlots)
	_, ok := s.get(5)
	require.False(t, ok)
	require.False(t, s.del(5))
}

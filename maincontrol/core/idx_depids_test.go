package core

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDepIDs_RoundTrip(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	random := make([]uint64, 1000)
	for i := range random {
		random[i] = rnd.Uint64()
	}
	cases := map[string][]uint64{
		"none":                  nil,
		"one":                   {42},
		"ascending by one":      {1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
		"descending":            {1_000_000, 999_999, 500, 3, 1},
		"far apart":             {1, 1 << 40, 7, 1<<40 + 1},
		"the extremes":          {0, math.MaxUint64, 0, 1 << 63, 1<<63 - 1, math.MaxUint64 - 1, 1},
		"random 64-bit":         random,
		"differences near 2^63": {1<<63 + 5, 3, 1<<63 + 4, math.MaxUint64},
	}
	for name, ids := range cases {
		t.Run(name, func(t *testing.T) {
			d := encodeDeps(ids)
			assert.Equal(t, len(ids), d.len())
			if len(ids) == 0 {
				assert.Nil(t, d.appendTo(nil))
			} else {
				assert.Equal(t, ids, d.appendTo(nil))
			}
			assert.Equal(t, ids, slices.Collect(d.all()))
			assert.Equal(t, []uint64{9, 8}, d.appendTo([]uint64{9, 8})[:2], "appends after what dst holds")

			// A cursor saved before any id resumes there (depsSucceeded).
			for i := range ids {
				var c depCursor
				for range i {
					_, ok := d.next(&c)
					require.True(t, ok)
				}
				saved := c
				id, ok := d.next(&saved)
				require.True(t, ok)
				assert.Equal(t, ids[i], id, "id %d", i)
			}
		})
	}
}

// Ids submitted together take about a byte each, not eight.
func TestDepIDs_Size(t *testing.T) {
	ids := make([]uint64, 100_000)
	for i := range ids {
		ids[i] = 5_000_000 + uint64(i)
	}
	assert.LessOrEqual(t, len(encodeDeps(ids).b), len(ids)+8)
	slices.Reverse(ids)
	assert.LessOrEqual(t, len(encodeDeps(ids).b), len(ids)+8)
}

package bench

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFrameCounter_Feed(t *testing.T) {
	var stream []byte
	for _, f := range [][]byte{
		frame("type", "stats", "req", "f", "tasks.pending", "0"),
		frame("type", "error", "req", "f", "code", "not_permitted", "message", "no"),
		frame("type", "x"),                  // shorter than the error prefix
		frame("type", "error"),              // no other key: still an error
		frame("type", "errors", "req", "f"), // another type that starts the same
		frame("type", "state", "state_version", "3"),
		frame("type", "error", "code", "bad_request"),
	} {
		stream = append(stream, f...)
	}
	const frames, errors = 7, 3
	splits := map[string]func(n int) int{
		"whole":       func(n int) int { return n },
		"byte a time": func(int) int { return 1 },
		"random":      func(n int) int { return 1 + rand.IntN(n) },
	}
	for name, next := range splits {
		t.Run(name, func(t *testing.T) {
			var c frameCounter
			for p := stream; len(p) > 0; {
				k := next(len(p))
				require.NoError(t, c.feed(p[:k]))
				p = p[k:]
			}
			assert.EqualValues(t, frames, c.frames)
			assert.EqualValues(t, errors, c.errors)
			assert.Zero(t, c.nhdr, "no frame left half read")
		})
	}
	t.Run("partial frame not counted", func(t *testing.T) {
		var c frameCounter
		require.NoError(t, c.feed(stream[:len(stream)-1]))
		assert.EqualValues(t, frames-1, c.frames)
		assert.EqualValues(t, errors-1, c.errors)
	})
	t.Run("length 0", func(t *testing.T) {
		var c frameCounter
		assert.ErrorIs(t, c.feed([]byte{0, 0, 0, 0}), errZeroLength)
	})
}

// The readers count replies without allocating: each costs the harness
// only what it must.
func TestFrameCounter_NoAllocation(t *testing.T) {
	stream := append(frame("type", "stats", "req", "f"), frame("type", "error", "code", "x")...)
	var c frameCounter
	allocs := testing.AllocsPerRun(100, func() { _ = c.feed(stream) })
	assert.Zero(t, allocs)
}

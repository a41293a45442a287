package bench_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/apollo11/apollo11/bench"
)

func TestPacer_Due(t *testing.T) {
	start := time.Unix(1000, 0)
	p := bench.NewPacer(start, 1000, -1, 0, 1) // one task per ms
	tests := []struct {
		at   time.Duration
		want int64
	}{
		{-time.Millisecond, 0},
		{0, 1}, // task 0 is due at start
		{999 * time.Microsecond, 1},
		{time.Millisecond, 2},
		{10*time.Millisecond + 1, 11},
		{time.Second, 1001},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, p.Due(start.Add(tt.at)), "at %v", tt.at)
	}
	assert.Equal(t, start.Add(5*time.Millisecond), p.Intended(5))
}

// TestPacer_ClosedLoopWaitsForStart pins that a closed-loop producer sends
// nothing before the run's start: a run timed from its start whose tasks
// all finished before it had no elapsed time and no throughput.
func TestPacer_ClosedLoopWaitsForStart(t *testing.T) {
	start := time.Unix(1000, 0)
	p := bench.NewPacer(start, 0, 500, 0, 1)
	assert.Zero(t, p.Due(start.Add(-time.Nanosecond)))
	assert.EqualValues(t, 500, p.Due(start), "everything at once from the start")
}

func TestPacer_SharedSchedule(t *testing.T) {
	start := time.Unix(1000, 0)
	const n, total = 3, 10
	seen := map[time.Time]bool{}
	var sum int64
	for k := range n {
		p := bench.NewPacer(start, 300, total, k, n) // together 300/s: one per 3.33 ms
		sum += p.Total()
		for i := range p.Total() {
			at := p.Intended(i)
			assert.False(t, seen[at], "two producers share slot %v", at)
			seen[at] = true
			// Due agrees with Intended exactly at the boundary.
			assert.Equal(t, i+1, p.Due(at), "producer %d task %d", k, i)
			assert.Equal(t, i, p.Due(at.Add(-time.Nanosecond)))
		}
		assert.Equal(t, p.Total(), p.Due(start.Add(time.Hour)), "capped at the total")
	}
	assert.EqualValues(t, total, sum)
	// The slots are evenly spread: 300/s is one every 3.333 ms.
	var last time.Time
	for i := range total {
		var earliest time.Time
		for at := range seen {
			if at.After(last) && (earliest.IsZero() || at.Before(earliest)) {
				earliest = at
			}
		}
		if i > 0 {
			assert.InDelta(t, float64(10*time.Millisecond/3), float64(earliest.Sub(last)), 2)
		}
		last = earliest
	}
}

func TestPacer_ClosedLoop(t *testing.T) {
	start := time.Unix(1000, 0)
	p := bench.NewPacer(start, 0, 7, 0, 1)
	assert.EqualValues(t, 7, p.Due(start), "everything is due at once")
	assert.Equal(t, start, p.Intended(6))
}

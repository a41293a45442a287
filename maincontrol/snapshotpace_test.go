package maincontrol

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// spin works for d on the calling goroutine.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// pauses records the pauses a pacer asks for instead of sleeping: what
// it asks for is the rule, and timing real sleeps fails on a busy host.
func pauses(p *pacer) *[]time.Duration {
	var got []time.Duration
	p.sleep = func(d time.Duration) { got = append(got, d) }
	return &got
}

func TestPacer_KeepsDutyCycle(t *testing.T) {
	var hurry atomic.Bool
	p := newPacer(0.25, 10, &hurry)
	got := pauses(p)
	for i := 0; i < 100; i++ { // 10 pauses after 10 x 1 ms of work each
		spin(time.Millisecond)
		p.step()
	}
	// At a quarter duty, each pause is three times the work before it.
	require.Len(t, *got, 10)
	for _, d := range *got {
		assert.GreaterOrEqual(t, d, 30*time.Millisecond)
	}

	hurry.Store(true)
	*got = nil
	for i := 0; i < 100; i++ {
		spin(time.Millisecond)
		p.step()
	}
	assert.Empty(t, *got, "no pauses once hurried")
}

func TestPacer_FullDutyNeverSleeps(t *testing.T) {
	var hurry atomic.Bool
	p := newPacer(1, 1, &hurry)
	got := pauses(p)
	for i := 0; i < 1000; i++ {
		p.step()
	}
	assert.Empty(t, *got)
}

// A snapshot smaller than a step's count still owes a rest once written,
// of three times its work at a quarter duty, at most restMax. A stop's
// hurry owes none.
func TestPacer_RestAfterWorkBelowAStep(t *testing.T) {
	var hurry atomic.Bool
	p := newPacer(0.25, 1024, &hurry)
	got := pauses(p)
	for range 10 {
		spin(time.Millisecond)
		p.step()
	}
	assert.Empty(t, *got, "ten steps of 1,024 do not pause")
	assert.GreaterOrEqual(t, p.rest(), 30*time.Millisecond)

	long := newPacer(0.25, 1024, &hurry)
	long.since = time.Now().Add(-time.Hour)
	assert.Equal(t, restMax, long.rest())

	hurry.Store(true)
	assert.Zero(t, p.rest(), "no rest once hurried")
	assert.Zero(t, newPacer(1, 1024, &hurry).rest(), "none at full duty")
}

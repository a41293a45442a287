package maincontrol

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// spin works for d on the calling goroutine.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

func TestPacer_KeepsDutyCycle(t *testing.T) {
	var hurry atomic.Bool
	p := newPacer(0.25, 10, &hurry)
	start := time.Now()
	for i := 0; i < 100; i++ { // 10 pauses after 10 x 1 ms of work each
		spin(time.Millisecond)
		p.step()
	}
	took := time.Since(start)
	// 100 ms of work at a quarter duty: about 400 ms in all.
	assert.GreaterOrEqual(t, took, 300*time.Millisecond)

	hurry.Store(true)
	start = time.Now()
	for i := 0; i < 100; i++ {
		spin(time.Millisecond)
		p.step()
	}
	assert.Less(t, time.Since(start), 250*time.Millisecond, "no pauses once hurried")
}

func TestPacer_FullDutyNeverSleeps(t *testing.T) {
	var hurry atomic.Bool
	p := newPacer(1, 1, &hurry)
	start := time.Now()
	for i := 0; i < 1000; i++ {
		p.step()
	}
	assert.Less(t, time.Since(start), 100*time.Millisecond)
}

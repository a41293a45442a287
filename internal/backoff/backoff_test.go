package backoff_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/apollo11/apollo11/internal/backoff"
)

func TestBackoff_Next(t *testing.T) {
	b := backoff.Backoff{Min: 500 * time.Millisecond, Max: 30 * time.Second}
	ceilings := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
		8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for round := range 50 { // the jitter is random: check the bounds many times
		b.Reset()
		for i, d := range ceilings {
			got := b.Next()
			assert.GreaterOrEqual(t, got, d/2, "round %d attempt %d", round, i)
			assert.LessOrEqual(t, got, d, "round %d attempt %d", round, i)
		}
	}
	b.Reset()
	assert.LessOrEqual(t, b.Next(), 500*time.Millisecond, "reset starts again from min")
}

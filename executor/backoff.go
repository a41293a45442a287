package executor

import (
	"math/rand/v2"
	"time"
)

// backoff is the reconnect delay: it doubles from min up to max, and each
// delay is drawn at random from [d/2, d] so that executors restarted
// together do not reconnect together.
type backoff struct {
	min, max time.Duration
	cur      time.Duration // 0 before the first failure
}

// next returns the delay before the next attempt.
func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(b.cur*2, b.max)
	}
	half := b.cur / 2
	if half <= 0 {
		return b.cur
	}
	return half + rand.N(b.cur-half+1)
}

// reset starts the doubling again, after a successful registration.
func (b *backoff) reset() { b.cur = 0 }

// Package backoff is the reconnect delay of the executor and the client.
// It is exponential, capped, with jitter.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Backoff is the reconnect delay. It doubles from Min up to Max. Each
// delay is drawn at random from [d/2, d]. So peers restarted together do
// not reconnect together.
type Backoff struct {
	Min, Max time.Duration
	cur      time.Duration // 0 before the first failure
}

// Next returns the delay before the next attempt.
func (b *Backoff) Next() time.Duration {
	if b.cur == 0 {
		b.cur = b.Min
	} else {
		b.cur = min(b.cur*2, b.Max)
	}
	half := b.cur / 2
	if half <= 0 {
		return b.cur
	}
	return half + rand.N(b.cur-half+1)
}

// Reset starts the doubling again, after a successful connection.
func (b *Backoff) Reset() { b.cur = 0 }

package core

import "time"

// Clock tells the core the time. The server passes the system clock. Tests
// pass a clock they move by hand.
type Clock interface {
	Now() time.Time
}

// SystemClock is the real wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// ManualClock is a Clock that moves only when T is set. It serves tests,
// and tools that drive a core through time of their own.
type ManualClock struct{ T time.Time }

// Now returns T.
func (c *ManualClock) Now() time.Time { return c.T }

// addMs adds a non-negative millisecond count to t. It saturates instead
// of overflowing, as timeouts and delays are uint64 on the wire.
func addMs(t int64, ms uint64) int64 {
	const maxMs = int64(^uint64(0) >> 1)
	if ms > uint64(maxMs-t) {
		return maxMs
	}
	return t + int64(ms)
}

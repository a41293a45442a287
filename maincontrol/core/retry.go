package core

import "time"

// backoff is the retry delay after attempt n of a task of tt failed. It is
// min(cap, base*2^(n-1)) by default, or what the type's policy says. A
// random factor in [0.5, 1] keeps retries from firing together.
func (c *Core) backoff(tt *taskType, n uint32) time.Duration {
	kind, base, ceil := c.retryDelay(tt)
	d := base
	if kind == RetryExponential {
		d = ceil
		if n >= 1 && n-1 < 32 {
			if e := base << (n - 1); e > 0 && e < d {
				d = e
			}
		}
	}
	return time.Duration(float64(d) * (0.5 + 0.5*c.rnd.Float64()))
}

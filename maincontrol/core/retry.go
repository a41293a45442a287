package core

import "time"

// backoff is the retry delay after attempt n failed: min(cap, base*2^(n-1))
// times a random factor in [0.5, 1], so that retries do not fire together.
func (c *Core) backoff(n uint32) time.Duration {
	d := c.cfg.RetryCap
	if n >= 1 && n-1 < 32 {
		if e := c.cfg.RetryBase << (n - 1); e > 0 && e < d {
			d = e
		}
	}
	return time.Duration(float64(d) * (0.5 + 0.5*c.rnd.Float64()))
}

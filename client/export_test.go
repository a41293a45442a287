package client

import "time"

// SetBounceGrace changes bounceGrace for one test. It returns the undo.
func SetBounceGrace(d time.Duration) (undo func()) {
	old := bounceGrace
	bounceGrace = d
	return func() { bounceGrace = old }
}

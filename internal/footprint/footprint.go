// Package footprint keeps an idle daemon's resident memory small.
//
// Most of an idle daemon's RSS is its own binary. The kernel maps 64 KB
// of cached file pages around every page fault. So startup alone leaves
// about 80% of the text and read-only data mapped. Idle, the daemons use
// about 1 MB of it. Release drops those mappings once startup is over.
// A page used later maps back from the page cache, without any I/O.
package footprint

import (
	"context"
	"time"
)

// Keep calls Release once first has passed, as startup is over by then.
// It then calls it every every, until ctx ends. So a burst of work (a
// snapshot, a query, a task) leaves its pages mapped no longer than that.
// A receive from now releases at once and starts the wait again. The
// daemon sends one after a burst it knows has ended, such as an idle
// snapshot. A nil now never receives. report gets the first call's
// outcome (nil when released). It also gets a later failure, after which
// Keep stops. Failing costs only memory.
func Keep(ctx context.Context, first, every time.Duration, now <-chan struct{}, report func(error)) {
	t := time.NewTimer(first)
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-now:
		}
		err := Release()
		if n == 0 || err != nil {
			report(err)
		}
		if err != nil {
			return
		}
		t.Reset(every)
	}
}

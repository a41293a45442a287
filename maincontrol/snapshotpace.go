package maincontrol

import (
	"sync/atomic"
	"time"
)

// snapshotDuty is the share of one core a background snapshot may use.
// With --snapshot-every 100 a snapshot is due again as soon as one ends
// under load, and writing the full state back to back took a whole core
// from the event loop, the log writer and the clients on a 2-core host
// (64 submitters, --fsync always: 19k confirmed submits/s paced at 1.0,
// 33k with snapshots out of the way; bench/README.md). Pacing only makes
// each snapshot take longer; as at most one runs at a time, they come
// less often under load and as often as the spec asks when idle.
const snapshotDuty = 0.25

// pacer keeps a loop of work to a duty cycle: every n steps it sleeps in
// proportion to the time worked since the last pause.
type pacer struct {
	duty  float64
	every int
	steps int
	since time.Time
	hurry *atomic.Bool // when set, no more pauses (a stop is waiting)
	sleep func(time.Duration)
}

func newPacer(duty float64, every int, hurry *atomic.Bool) *pacer {
	return &pacer{duty: duty, every: every, since: time.Now(), hurry: hurry, sleep: time.Sleep}
}

// step counts one unit of work and pauses when one is due.
func (p *pacer) step() {
	if p == nil || p.duty >= 1 || p.hurry.Load() {
		return
	}
	if p.steps++; p.steps < p.every {
		return
	}
	p.steps = 0
	worked := time.Since(p.since)
	p.sleep(time.Duration(float64(worked) * (1 - p.duty) / p.duty))
	p.since = time.Now()
}

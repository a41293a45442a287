package maincontrol

import (
	"sync/atomic"
	"time"
)

// pacer keeps a loop of work to a duty cycle. Every n steps, it sleeps in
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

// rest is the pause owed for the work since the last one, as step would
// take it. The next snapshot may start only once it is over (see
// maybeSnapshot): a small snapshot never reaches a step's count, and
// its files' creation and fsyncs are no steps, so under load snapshots
// ran back to back at full speed. Nothing waits through the rest: it
// only delays when the next snapshot may start, and a stop's last
// snapshot does not wait for it. It is at most restMax. The work is wall
// time, fsyncs' waits too: a slow disk spaces snapshots more, which also
// spares it writes.
func (p *pacer) rest() time.Duration {
	if p == nil || p.duty >= 1 || p.hurry.Load() {
		return 0
	}
	worked := time.Since(p.since)
	return min(time.Duration(float64(worked)*(1-p.duty)/p.duty), restMax)
}

// restMax bounds the rest after a snapshot, so that one slow disk write
// does not hold the next snapshot back for long.
const restMax = time.Second

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

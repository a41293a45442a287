package bench

import (
	"math"
	"time"
)

// Pacer is the open-loop schedule of one producer.
// Task i is meant to be sent at start + (i + phase) / rate.
// That holds whatever happened to earlier tasks.
// Latency is measured from that intended time, not from the real send.
// So a stalled server is charged for the tasks it kept the producer from sending.
// That avoids coordinated omission.
//
// A Pacer with rate 0 is closed-loop. Every task is due at once.
// The caller limits what is in flight instead.
type Pacer struct {
	start time.Time
	rate  float64 // tasks per second; 0: closed loop
	phase float64 // in tasks, in [0, 1): spreads producers over the interval
	total int64   // tasks to send; <0: unbounded
}

// NewPacer returns the schedule of one of producers producers.
// They share a total rate (tasks per second) and a total task count.
// A negative count means no limit.
// Producer k of n sends every n-th slot of the shared schedule.
// So together they send evenly at rate.
func NewPacer(start time.Time, rate float64, total int64, k, n int) Pacer {
	if n < 1 {
		n = 1
	}
	p := Pacer{start: start, rate: rate / float64(n), phase: float64(k) / float64(n), total: -1}
	if total >= 0 {
		// Slot j of the shared schedule goes to producer j mod n.
		p.total = total / int64(n)
		if int64(k) < total%int64(n) {
			p.total++
		}
	}
	return p
}

// Total returns how many tasks this producer sends, negative for no limit.
func (p Pacer) Total() int64 { return p.total }

// Intended returns when task i should be sent.
func (p Pacer) Intended(i int64) time.Time {
	if p.rate <= 0 {
		return p.start
	}
	return p.start.Add(time.Duration((float64(i) + p.phase) / p.rate * 1e9))
}

// Due returns how many tasks should have been sent by now.
// That is the count of i with Intended(i) <= now, capped at the total.
// Before the start nothing is due, in closed loop too.
// A run is timed from its start.
// So a submit sent earlier would make the run look shorter than it was.
func (p Pacer) Due(now time.Time) int64 {
	var n int64
	if now.Before(p.start) {
		return 0
	}
	if p.rate <= 0 {
		n = math.MaxInt64
	} else {
		elapsed := now.Sub(p.start).Seconds()
		n = max(int64(math.Floor(elapsed*p.rate-p.phase))+1, 0)
		// Floating point may be a nanosecond off either way.
		for n > 0 && p.Intended(n-1).After(now) {
			n--
		}
		for !p.Intended(n).After(now) && (p.total < 0 || n < p.total) {
			n++
		}
	}
	if p.total >= 0 {
		n = min(n, p.total)
	}
	return n
}

package bench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progressEvery throttles the progress bar to a few updates a second.
const progressEvery = 250 * time.Millisecond

// progress draws a one-line bar on a terminal (carriage return, no
// newline until finish). A nil writer draws nothing.
type progress struct {
	w        io.Writer
	label    string
	total    int64
	duration time.Duration
	start    time.Time
	last     time.Time
	lastDone int64
	lastAt   time.Time
	drawn    bool
}

func newProgress(w io.Writer, label string, total int64, d time.Duration, start time.Time) *progress {
	return &progress{w: w, label: label, total: total, duration: d, start: start, lastAt: start}
}

// update redraws the bar when enough time has passed since the last time.
func (p *progress) update(done, sent int64) {
	if p == nil || p.w == nil {
		return
	}
	now := time.Now()
	if now.Sub(p.last) < progressEvery {
		return
	}
	rate := 0.0
	if dt := now.Sub(p.lastAt).Seconds(); dt > 0 && !p.last.IsZero() {
		rate = float64(done-p.lastDone) / dt
	}
	p.last, p.lastAt, p.lastDone = now, now, done
	frac := 0.0
	switch {
	case p.total > 0:
		frac = float64(done) / float64(p.total)
	case p.duration > 0:
		frac = now.Sub(p.start).Seconds() / p.duration.Seconds()
	}
	frac = min(max(frac, 0), 1)
	const width = 30
	n := int(frac * width)
	bar := strings.Repeat("#", n) + strings.Repeat(".", width-n)
	fmt.Fprintf(p.w, "\r%s[%s] %3.0f%%  %s done, %s sent, %s/s, %.0fs   ", p.label, bar, 100*frac,
		group(float64(done)), group(float64(sent)), group(rate), max(now.Sub(p.start).Seconds(), 0))
	p.drawn = true
}

// final draws the last state, however soon after the previous one, with
// the average rate.
func (p *progress) final(done, sent int64) {
	if p == nil || p.w == nil || !p.drawn {
		return
	}
	// Show the average rate over the whole run.
	p.last, p.lastAt, p.lastDone = time.Now().Add(-progressEvery), p.start, 0
	p.update(done, sent)
}

// finish ends the bar's line.
func (p *progress) finish() {
	if p != nil && p.w != nil && p.drawn {
		fmt.Fprint(p.w, "\n")
	}
}

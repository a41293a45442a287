package dashboard

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

type sample struct {
	at time.Time
	t  Totals
}

// ring keeps the latest samples of the totals. It is a fixed array, so the
// chart's memory does not grow with uptime.
type ring struct {
	mu   sync.Mutex
	buf  []sample
	next int
	n    int
}

func newRing(n int) *ring { return &ring{buf: make([]sample, n)} }

func (r *ring) add(at time.Time, t Totals) {
	r.mu.Lock()
	r.buf[r.next] = sample{at, t}
	r.next = (r.next + 1) % len(r.buf)
	r.n = min(r.n+1, len(r.buf))
	r.mu.Unlock()
}

// samples returns the samples, oldest first.
func (r *ring) samples() []sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]sample, 0, r.n)
	for i := range r.n {
		out = append(out, r.buf[(r.next-r.n+i+len(r.buf))%len(r.buf)])
	}
	return out
}

// chart is the throughput chart, drawn as SVG polylines by the template.
type chart struct {
	W, H      int
	Submitted string // polyline points
	Ended     string
	Failed    string
	Peak      string // the top of the scale, per second
	Window    string // how far back the chart goes
	Now       rates  // over the latest interval
	Empty     bool   // fewer than two samples yet
}

type rates struct{ Submitted, Ended, Failed string }

const chartW, chartH = 840, 160

// throughput turns successive samples into rates per second. It then turns
// the rates into points on the chart.
func throughput(ss []sample, every time.Duration, slots int) chart {
	c := chart{W: chartW, H: chartH, Window: (every * time.Duration(slots)).String()}
	if len(ss) < 2 {
		c.Empty = true
		return c
	}
	type point struct{ sub, end, fail float64 }
	pts := make([]point, 0, len(ss)-1)
	peak := 1.0
	for i := 1; i < len(ss); i++ {
		dt := ss[i].at.Sub(ss[i-1].at).Seconds()
		if dt <= 0 {
			continue
		}
		a, b := ss[i-1].t, ss[i].t
		p := point{sub: delta(a.Submitted, b.Submitted) / dt,
			end:  delta(a.Succeeded+a.Failed+a.Cancelled, b.Succeeded+b.Failed+b.Cancelled) / dt,
			fail: delta(a.Failed, b.Failed) / dt}
		peak = max(peak, p.sub, p.end)
		pts = append(pts, p)
	}
	if len(pts) == 0 {
		c.Empty = true
		return c
	}
	// The x axis spans the whole ring, newest at the right edge, so the
	// chart fills from the right as samples come.
	step := float64(chartW) / float64(max(slots-1, 1))
	x0 := float64(chartW) - step*float64(len(pts)-1)
	line := func(v func(point) float64) string {
		var b strings.Builder
		for i, p := range pts {
			y := float64(chartH) - v(p)/peak*float64(chartH-4)
			fmt.Fprintf(&b, "%.1f,%.1f ", x0+step*float64(i), y)
		}
		return strings.TrimSpace(b.String())
	}
	c.Submitted = line(func(p point) float64 { return p.sub })
	c.Ended = line(func(p point) float64 { return p.end })
	c.Failed = line(func(p point) float64 { return p.fail })
	c.Peak = perSecond(peak)
	last := pts[len(pts)-1]
	c.Now = rates{perSecond(last.sub), perSecond(last.end), perSecond(last.fail)}
	return c
}

// delta is b-a, or 0 if a counter went back (a restart of its source).
func delta(a, b uint64) float64 {
	if b < a {
		return 0
	}
	return float64(b - a)
}

func perSecond(v float64) string {
	if v >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

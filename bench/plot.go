package bench

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// The plot has two panels: latency by percentile (the x axis spreads the
// tail out, as HdrHistogram plots do: x = log10(1/(1-p))) and throughput
// over time, one point per second. It is written as plain SVG: any
// browser or viewer draws it, so the harness needs no rasteriser.

const (
	plotW, plotH = 960, 880
	marginL      = 90
	marginR      = 60
	panelH       = 270
	panelGap     = 130 // from one panel's bottom to the next one's top
	firstPanel   = 150 // top of the first panel's plot area
	charW        = 12  // a generous text advance in pixels, for wrapping (13 px sans-serif)
)

var (
	colInk    = color.RGBA{0x22, 0x22, 0x22, 0xff}
	colGrid   = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
	colSeries = []color.RGBA{{0x1f, 0x77, 0xb4, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}}
)

// series is one line of a panel, in data coordinates.
type series struct {
	name string
	pts  [][2]float64
}

// tick is an axis mark at a data coordinate.
type tick struct {
	at    float64
	label string
}

// panel is one chart.
type panel struct {
	title          string
	xLabel, yLabel string
	xMin, xMax     float64
	yMax           float64
	xTicks, yTicks []tick
	lines          []series
	note           string // drawn across an empty panel: why it is empty
}

// WritePlotFile draws the report's latency distribution and throughput
// over time to path, an SVG file.
func WritePlotFile(path string, r *Report) error {
	if err := CheckPlotPath(path); err != nil {
		return err
	}
	return os.WriteFile(path, PlotSVG(r), 0o644)
}

// CheckPlotPath checks that path names a plot WritePlotFile can draw, so
// that a wrong name is found before a run, not after it.
func CheckPlotPath(path string) error {
	if strings.EqualFold(filepath.Ext(path), ".svg") {
		return nil
	}
	return fmt.Errorf("--plot %s: want a .svg file (open it in a browser)", path)
}

// draw renders the report's two panels on c.
func draw(c *svgCanvas, r *Report) {
	title := fmt.Sprintf("apollo11-bench: %s loop, %s tasks completed, %s tasks/s", r.Loop,
		group(float64(r.Completed)), group(r.Throughput))
	if r.Loop == "open" {
		title += fmt.Sprintf(" (target %s/s)", group(r.Rate))
	}
	lines := append(wrap(title, plotW/charW-4), wrap(r.Setup, plotW/charW-4)...)
	for i, l := range lines[:min(len(lines), 4)] {
		c.text(plotW/2, 26+22*float64(i), l, "middle", colInk)
	}
	drawPanel(c, latencyPanel(r), firstPanel)
	drawPanel(c, throughputPanel(r), firstPanel+panelH+panelGap)
}

// wrap cuts s into lines of at most n characters at spaces.
func wrap(s string, n int) []string {
	var lines []string
	cur := ""
	for _, w := range strings.Fields(s) {
		if cur != "" && len(cur)+1+len(w) > n {
			lines = append(lines, cur)
			cur = ""
		}
		if cur != "" {
			cur += " "
		}
		cur += w
	}
	return append(lines, cur)
}

// latencyPanel plots submit-to-dispatch, submit-to-done and
// submit-to-submitted against the percentile.
func latencyPanel(r *Report) panel {
	p := panel{title: "latency by percentile", xLabel: "percentile", yLabel: "ms"}
	var n uint64
	for _, h := range []*Histogram{r.DispatchHist, r.DoneHist, r.AckHist} {
		if h != nil {
			n = max(n, h.Count())
		}
	}
	decades := math.Ceil(math.Log10(float64(max(n, 10))))
	decades = min(max(decades, 1), 6)
	p.xMin, p.xMax = 0, decades
	for d := 0.0; d <= decades; d++ {
		p.xTicks = append(p.xTicks, tick{d, percentLabel(d)})
	}
	var top float64
	for _, s := range []struct {
		name string
		h    *Histogram
	}{{"submit -> dispatch", r.DispatchHist}, {"submit -> done", r.DoneHist}, {"submit -> submitted", r.AckHist}} {
		if s.h == nil || s.h.Count() == 0 {
			continue
		}
		var pts [][2]float64
		for x := 0.0; x < decades; x += decades / 300 {
			pc := 100 * (1 - math.Pow(10, -x))
			pts = append(pts, [2]float64{x, float64(s.h.Percentile(max(pc, 1e-9))) / 1e6})
		}
		pts = append(pts, [2]float64{decades, float64(s.h.Max()) / 1e6})
		top = max(top, pts[len(pts)-1][1])
		p.lines = append(p.lines, series{s.name, pts})
	}
	p.yMax, p.yTicks = niceAxis(top)
	return p
}

// percentLabel names the percentile at x = log10(1/(1-p)).
func percentLabel(d float64) string {
	if d == 0 {
		return "0%"
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.6f", 100*(1-math.Pow(10, -d))), "0"), ".") + "%"
}

// throughputPoints returns the submits and completions per second of
// the run, one point per second of its timeline, and the highest.
func throughputPoints(r *Report) (sub, done [][2]float64, top float64) {
	elapsed := max(r.Elapsed, 1e-9)
	rate := func(i int, n uint64) (float64, bool) {
		w := min(1, elapsed-float64(i))
		if w < 0.25 {
			return 0, false // a sliver of a second says nothing
		}
		return float64(n) / w, true
	}
	for i, s := range r.Timeline {
		if v, ok := rate(i, s.Submitted); ok {
			sub = append(sub, [2]float64{float64(i) + 0.5, v})
			top = max(top, v)
		}
		if v, ok := rate(i, s.Done); ok {
			done = append(done, [2]float64{float64(i) + 0.5, v})
			top = max(top, v)
		}
	}
	return sub, done, top
}

// throughputPanel plots submits and completions per second.
func throughputPanel(r *Report) panel {
	p := panel{title: "throughput over time", xLabel: "seconds", yLabel: "tasks/s"}
	elapsed := max(r.Elapsed, 1e-9)
	sub, done, top := throughputPoints(r)
	p.lines = []series{{"submitted", sub}, {"completed", done}}
	// One point per second draws no line under two seconds or so: say so
	// rather than leave an empty panel that reads as "nothing happened".
	p.note = ShortRunNote(r)
	p.xMin, p.xMax = 0, math.Max(1, math.Ceil(elapsed))
	step := niceStep(p.xMax / 10)
	for x := 0.0; x <= p.xMax+1e-9; x += step {
		p.xTicks = append(p.xTicks, tick{x, trimFloat(x)})
	}
	p.yMax, p.yTicks = niceAxis(top)
	return p
}

// niceAxis returns an axis top at or above v and about five ticks.
func niceAxis(v float64) (float64, []tick) {
	if v <= 0 {
		v = 1
	}
	step := niceStep(v / 5)
	top := math.Ceil(v/step) * step
	var ts []tick
	for y := 0.0; y <= top+step/2; y += step {
		ts = append(ts, tick{y, trimFloat(y)})
	}
	return top, ts
}

// niceStep rounds v up to 1, 2 or 5 times a power of ten.
func niceStep(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}

func trimFloat(f float64) string {
	if math.Abs(f) >= 1000 {
		return group(f)
	}
	s := fmt.Sprintf("%.3f", f)
	return strings.TrimRight(strings.TrimRight(s, "0"), ".")
}

// drawPanel draws one panel whose plot area starts at top.
func drawPanel(c *svgCanvas, p panel, top float64) {
	left, right, bottom := float64(marginL), float64(plotW-marginR), top+panelH
	sx := func(x float64) float64 { return left + (x-p.xMin)/(p.xMax-p.xMin)*(right-left) }
	sy := func(y float64) float64 { return bottom - y/p.yMax*(bottom-top) }
	c.text(left, top-34, p.title+" ("+p.yLabel+")", "start", colInk)
	for _, t := range p.yTicks {
		y := sy(t.at)
		c.line(left, y, right, y, colGrid, 1)
		c.text(left-8, y+5, t.label, "end", colInk)
	}
	for _, t := range p.xTicks {
		x := sx(t.at)
		c.line(x, top, x, bottom, colGrid, 1)
		c.text(x, bottom+20, t.label, "middle", colInk)
	}
	c.line(left, bottom, right, bottom, colInk, 1)
	c.line(left, top, left, bottom, colInk, 1)
	c.text((left+right)/2, bottom+44, p.xLabel, "middle", colInk)
	lx := left
	for i, s := range p.lines {
		col := colSeries[i%len(colSeries)]
		pts := make([][2]float64, len(s.pts))
		for j, pt := range s.pts {
			pts[j] = [2]float64{sx(pt[0]), sy(math.Min(pt[1], p.yMax))}
		}
		if len(pts) > 0 {
			c.polyline(pts, col, 2)
		}
		c.line(lx, top-15, lx+24, top-15, col, 3)
		c.text(lx+30, top-10, s.name, "start", colInk)
		lx += 60 + charW*float64(len(s.name))
	}
	for i, l := range wrap(p.note, int((right-left)/charW)-2) {
		if l != "" {
			c.text((left+right)/2, top+panelH/2+22*float64(i), l, "middle", colInk)
		}
	}
}

// ShortRunNote explains, for a run too short to plot its throughput over
// time (one point per second; a line needs two), why that panel is empty;
// "" for a longer run.
func ShortRunNote(r *Report) string {
	if sub, done, _ := throughputPoints(r); len(sub) >= 2 || len(done) >= 2 {
		return "" // a line can be drawn
	}
	return fmt.Sprintf("run of %.2f s: too short for throughput over time, which is one point per second; "+
		"run 2 s or more (--duration, or more --tasks) to see it", r.Elapsed)
}

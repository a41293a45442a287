// Package metrics writes the Prometheus text exposition format (version
// 0.0.4) for a handful of counters, gauges and histograms. It uses no
// client library. The main control needs a dozen series, not a framework.
//
// Counters and histograms are updated with atomics from any goroutine.
// Gauges are read from functions when scraped.
package metrics

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
)

// Registry holds metrics in the order they were added.
type Registry struct {
	mu    sync.Mutex
	items []item
}

type item struct {
	name, help, kind string
	write            func(w *bufio.Writer, name string)
	block            func(w *bufio.Writer) // writes whole families, headers too
}

func (r *Registry) add(name, help, kind string, write func(*bufio.Writer, string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items = append(r.items, item{name: name, help: help, kind: kind, write: write})
}

// addBlock registers a writer of whole families. They are read together
// from one sample, each with its own HELP and TYPE lines.
func (r *Registry) addBlock(write func(*bufio.Writer)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items = append(r.items, item{block: write})
}

// Counter is a monotonically increasing count.
type Counter struct{ v atomic.Uint64 }

// Inc adds one.
func (c *Counter) Inc() { c.v.Add(1) }

// Add adds n.
func (c *Counter) Add(n uint64) { c.v.Add(n) }

// Value returns the count.
func (c *Counter) Value() uint64 { return c.v.Load() }

// Counter registers a counter.
func (r *Registry) Counter(name, help string) *Counter {
	c := &Counter{}
	r.add(name, help, "counter", func(w *bufio.Writer, n string) {
		fmt.Fprintf(w, "%s %d\n", n, c.Value())
	})
	return c
}

// CounterVec registers one counter per value of label, the values fixed
// up front. Series are written in the order given.
func (r *Registry) CounterVec(name, help, label string, values []string) map[string]*Counter {
	cs := make(map[string]*Counter, len(values))
	for _, v := range values {
		cs[v] = &Counter{}
	}
	vals := slices.Clone(values)
	r.add(name, help, "counter", func(w *bufio.Writer, n string) {
		for _, v := range vals {
			fmt.Fprintf(w, "%s{%s=%q} %d\n", n, label, v, cs[v].Value())
		}
	})
	return cs
}

// CounterFunc registers a counter read from fn when scraped.
func (r *Registry) CounterFunc(name, help string, fn func() float64) {
	r.add(name, help, "counter", func(w *bufio.Writer, n string) {
		fmt.Fprintf(w, "%s %s\n", n, format(fn()))
	})
}

// GaugeFunc registers a gauge read from fn when scraped.
func (r *Registry) GaugeFunc(name, help string, fn func() float64) {
	r.add(name, help, "gauge", func(w *bufio.Writer, n string) {
		fmt.Fprintf(w, "%s %s\n", n, format(fn()))
	})
}

// GaugeVecFunc registers a gauge with one label, read from fn when scraped.
// Series are written in label order.
func (r *Registry) GaugeVecFunc(name, help, label string, fn func() map[string]float64) {
	r.add(name, help, "gauge", func(w *bufio.Writer, n string) {
		vals := fn()
		keys := make([]string, 0, len(vals))
		for k := range vals {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "%s{%s=%q} %s\n", n, label, k, format(vals[k]))
		}
	})
}

// Histogram counts observations into buckets with fixed upper bounds.
type Histogram struct {
	bounds []float64
	counts []atomic.Uint64 // one per bound, plus +Inf
	sum    atomic.Uint64   // float64 bits
	count  atomic.Uint64
}

// Observe records one value.
func (h *Histogram) Observe(v float64) {
	i, _ := slices.BinarySearch(h.bounds, v)
	h.counts[i].Add(1)
	h.count.Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Histogram registers a histogram with the given ascending upper bounds.
func (r *Registry) Histogram(name, help string, bounds []float64) *Histogram {
	h := &Histogram{bounds: slices.Clone(bounds), counts: make([]atomic.Uint64, len(bounds)+1)}
	r.add(name, help, "histogram", func(w *bufio.Writer, n string) {
		cum := uint64(0)
		for i, b := range h.bounds {
			cum += h.counts[i].Load()
			fmt.Fprintf(w, "%s_bucket{le=%q} %d\n", n, format(b), cum)
		}
		cum += h.counts[len(h.bounds)].Load()
		fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n", n, cum)
		fmt.Fprintf(w, "%s_sum %s\n%s_count %d\n", n, format(math.Float64frombits(h.sum.Load())), n, cum)
	})
	return h
}

// HistogramFunc registers a histogram read from fn when scraped. fn gives
// per-bucket (not cumulative) counts, the sum and the count. counts has
// one entry per bound plus one for +Inf.
func (r *Registry) HistogramFunc(name, help string, bounds []float64, fn func() (counts []uint64, sum float64)) {
	r.add(name, help, "histogram", func(w *bufio.Writer, n string) {
		counts, sum := fn()
		cum := uint64(0)
		for i, b := range bounds {
			if i < len(counts) {
				cum += counts[i]
			}
			fmt.Fprintf(w, "%s_bucket{le=%q} %d\n", n, format(b), cum)
		}
		if len(counts) > len(bounds) {
			cum += counts[len(bounds)]
		}
		fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %s\n%s_count %d\n", n, cum, n, format(sum), n, cum)
	})
}

// WriteTo writes every metric in the text exposition format.
func (r *Registry) WriteTo(out io.Writer) (int64, error) {
	r.mu.Lock()
	items := slices.Clone(r.items)
	r.mu.Unlock()
	cw := &countingWriter{w: out}
	w := bufio.NewWriter(cw)
	for _, it := range items {
		if it.block != nil {
			it.block(w)
			continue
		}
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", it.name, it.help, it.name, it.kind)
		it.write(w, it.name)
	}
	err := w.Flush()
	return cw.n, err
}

// Handler serves the registry at /metrics.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = r.WriteTo(w)
	})
}

func format(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

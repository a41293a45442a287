package reliability_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// figure is one row of the published table: one kind of fault.
type figure struct {
	order      int // place in the table
	fault      string
	injected   int    // faults injected
	unit       string // what was injected: rounds, frames, connections, ...
	tasks      int    // tasks submitted during the run
	confirmed  int    // submits confirmed (submitted)
	lost       int    // confirmed submits missing or in the wrong state afterwards
	duplicates int    // tasks with more than one accepted result
	recovery   time.Duration
	probeMax   time.Duration // slowest well-behaved reply that passed the check
	probeSlow  int           // probes over the limit that were retried
	rssBase    int64         // main control RSS, bytes (0: not measured)
	rssPeak    int64
	rssAfter   int64
	notes      []string
}

// note adds a free-text remark to the row.
func (f *figure) note(format string, args ...any) {
	f.notes = append(f.notes, fmt.Sprintf(format, args...))
}

// recovered keeps the longest recovery seen.
func (f *figure) recovered(d time.Duration) { f.recovery = max(f.recovery, d) }

// probed keeps the slowest accepted probe.
func (f *figure) probed(p probeResult) {
	f.probeMax = max(f.probeMax, p.latency)
	f.probeSlow += p.retries
}

// figureTable collects the rows of every test.
type figureTable struct {
	mu   sync.Mutex
	rows []*figure
}

var figures = &figureTable{}

// add registers a row, placed by order; the test fills it in as it goes.
func (ft *figureTable) add(order int, fault string, unit string) *figure {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	f := &figure{order: order, fault: fault, unit: unit}
	ft.rows = append(ft.rows, f)
	return f
}

func (ft *figureTable) empty() bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return len(ft.rows) == 0
}

func (ft *figureTable) markdown() string {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	var b strings.Builder
	b.WriteString("| fault | injected | tasks | confirmed | lost | duplicates | longest recovery | slowest probe | main control RSS (MiB) base / peak / after |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	var notes []string
	rows := slices.Clone(ft.rows)
	slices.SortStableFunc(rows, func(a, b *figure) int { return a.order - b.order })
	for i, f := range rows {
		probe := ms(f.probeMax)
		if f.probeSlow > 0 {
			probe += fmt.Sprintf(" (%d retried)", f.probeSlow)
		}
		rss := "-"
		if f.rssBase > 0 {
			rss = fmt.Sprintf("%s / %s / %s", mib(f.rssBase), mib(f.rssPeak), mib(f.rssAfter))
		}
		tasks := []string{thousands(f.tasks), thousands(f.confirmed), thousands(f.lost), thousands(f.duplicates)}
		if f.tasks == 0 && f.confirmed == 0 && f.lost == 0 && f.duplicates == 0 {
			tasks = []string{"-", "-", "-", "-"} // no task load in this run
		}
		fmt.Fprintf(&b, "| %d. %s | %s %s | %s | %s | %s | %s | %s | %s | %s |\n", i+1, f.fault,
			thousands(f.injected), f.unit, tasks[0], tasks[1], tasks[2], tasks[3], ms(f.recovery), probe, rss)
		for _, n := range f.notes {
			notes = append(notes, fmt.Sprintf("%d. %s", i+1, n))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\nNotes:\n\n")
		for _, n := range notes {
			b.WriteString("- " + n + "\n")
		}
	}
	return b.String()
}

func ms(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func mib(n int64) string { return fmt.Sprintf("%.1f", float64(n)/(1<<20)) }

// thousands writes n with comma separators.
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

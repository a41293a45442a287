package reliability_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// attackRow is one row of the attacks' published table.
type attackRow struct {
	order         int
	name          string
	injected      string
	start         time.Time
	took          time.Duration
	peak          int64 // VmHWM of the main control, bytes
	memoryMax     int64
	witness       []time.Duration // round trips, failed ones too
	witnessFailed int
	witnessRun    int // most failed in a row
	witnessErr    error
	ended         string        // why the process went down; "": it stayed up
	honest        time.Duration // from the attack's end to an honest peer's done
	honestErr     error
	before        int // submits confirmed before the attack
	during        int // and during it, and the honest peer's
	lost          int
}

type attackTable struct {
	mu   sync.Mutex
	rows []*attackRow
}

var attackRows = &attackTable{}

func (at *attackTable) add(order int, name string) *attackRow {
	at.mu.Lock()
	defer at.mu.Unlock()
	r := &attackRow{order: order, name: name}
	at.rows = append(at.rows, r)
	return r
}

func (at *attackTable) empty() bool {
	at.mu.Lock()
	defer at.mu.Unlock()
	return len(at.rows) == 0
}

func (at *attackTable) markdown() string {
	at.mu.Lock()
	defer at.mu.Unlock()
	var b strings.Builder
	b.WriteString("| attack | injected | took | peak RSS (MiB) / MemoryMax | witness p50 / p99 / max | witness requests (failed) | stayed up | confirmed before / during | lost | honest peer served after |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---|---:|---:|---:|\n")
	rows := slices.Clone(at.rows)
	slices.SortStableFunc(rows, func(a, b *attackRow) int { return a.order - b.order })
	for _, r := range rows {
		p50, p99, maxd := percentiles(r.witness)
		up := "yes"
		if r.ended != "" {
			up = "no: " + r.ended
		}
		honest := ms(r.honest)
		if r.honestErr != nil {
			honest = "not within " + honestLimit.String()
		}
		fmt.Fprintf(&b, "| %d. %s | %s | %.1f s | %s / %s | %s / %s / %s | %s (%s) | %s | %s / %s | %s | %s |\n",
			r.order, r.name, r.injected, r.took.Seconds(), mib(r.peak), mib(r.memoryMax), ms(p50), ms(p99), ms(maxd),
			thousands(len(r.witness)), thousands(r.witnessFailed), up, thousands(r.before), thousands(r.during),
			thousands(r.lost), honest)
	}
	return b.String()
}

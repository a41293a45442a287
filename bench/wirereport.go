// wirereport.go: the wire probe's report, its per-case tallies and how it is written.

package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/wire"
)

// WireReport is what the peer answered.
type WireReport struct {
	Target   string `json:"target"`
	Seed     uint64 `json:"seed"`
	MaxFrame uint64 `json:"max_frame"` // the peer's, as the probes were built for it
	// Skipped names the cases left out because no such probe can be
	// built for the peer, with why.
	Skipped    []string         `json:"skipped,omitempty"`
	Probes     int64            `json:"probes"`
	Elapsed    float64          `json:"elapsed_s"`
	Outcomes   map[string]int64 `json:"outcomes"` // over every probe
	Unexpected int64            `json:"unexpected"`
	DialErrors int64            `json:"dial_errors"`
	Cases      []WireCaseReport `json:"cases"`
	// Examples are the first few unexpected probes, with what to run to
	// reproduce each.
	Examples []WireExample `json:"examples,omitempty"`
	// AliveAfter says whether the peer still answered a stats request
	// after the run.
	AliveAfter bool    `json:"alive_after"`
	AliveError string  `json:"alive_error,omitempty"`
	Latency    Summary `json:"latency"` // probe sent to first answer
	// Crashed is set when the main control the harness started exited.
	Crashed string `json:"crashed,omitempty"`
	// TasksCreated counts the tasks the probes' submits created on the
	// peer (ids from its submitted replies); the run cancels them after.
	// TasksCancelled is how many of them it cancelled or found ended or
	// gone, and TasksLeft the ids it could not, with CleanupError why.
	TasksCreated   int64    `json:"tasks_created"`
	TasksCancelled int64    `json:"tasks_cancelled"`
	TasksLeft      []string `json:"tasks_left,omitempty"`
	CleanupError   string   `json:"cleanup_error,omitempty"`

	created []string // task ids to cancel

	hist *Histogram
}

// WireCaseReport is one case's tally.
type WireCaseReport struct {
	Name       string           `json:"name"`
	Expect     string           `json:"expect"`
	Probes     int64            `json:"probes"`
	Outcomes   map[string]int64 `json:"outcomes"`
	Unexpected int64            `json:"unexpected"`
	Latency    Summary          `json:"latency"`

	hist *Histogram
}

// WireExample is one unexpected probe.
type WireExample struct {
	Probe     int    `json:"probe"`
	Case      string `json:"case"`
	Sent      string `json:"sent"` // Go-quoted bytes
	Outcome   string `json:"outcome"`
	Expect    string `json:"expect"`
	Reproduce string `json:"reproduce"`
}

func newWireReport(cfg WireConfig, cases []wireCase) *WireReport {
	rep := &WireReport{Target: cfg.Addr, Seed: cfg.Seed, MaxFrame: cfg.MaxFrame, Outcomes: map[string]int64{}, hist: NewHistogram()}
	for _, c := range cases {
		rep.Cases = append(rep.Cases, WireCaseReport{Name: c.name, Expect: c.expect, Outcomes: map[string]int64{},
			hist: NewHistogram()})
	}
	return rep
}

// add tallies one probe; it runs on one goroutine.
func (rep *WireReport) add(cfg WireConfig, r probeResult) {
	rep.Probes++
	if r.dialErr != nil {
		rep.DialErrors++
		rep.Outcomes["dial error"]++
		return
	}
	rep.Outcomes[r.outcome]++
	rep.created = append(rep.created, r.created...)
	var cr *WireCaseReport
	for i := range rep.Cases {
		if rep.Cases[i].Name == r.c.name {
			cr = &rep.Cases[i]
		}
	}
	cr.Probes++
	cr.Outcomes[r.outcome]++
	if r.latency >= 0 {
		cr.hist.RecordDuration(r.latency)
		rep.hist.RecordDuration(r.latency)
	}
	if !slices.Contains(strings.Split(cr.Expect, "|"), r.expect) && r.expect != r.c.expect {
		cr.Expect += "|" + r.expect // a probe over max_frame: frame_too_large
	}
	if !matches(r.expect, r.outcome) {
		cr.Unexpected++
		rep.Unexpected++
		if len(rep.Examples) < 10 || cfg.Probe >= 0 {
			sent := r.sent
			if len(sent) > 300 {
				sent = sent[:300]
			}
			rep.Examples = append(rep.Examples, WireExample{Probe: r.idx, Case: r.c.name, Sent: strconv.Quote(string(sent)),
				Outcome: r.outcome, Expect: r.expect,
				Reproduce: fmt.Sprintf("apollo11-bench wire --addr %s --seed %d --probe %d", cfg.Addr, cfg.Seed, r.idx)})
		}
	}
}

func (rep *WireReport) finish() {
	rep.Latency = rep.hist.Summarize()
	for i := range rep.Cases {
		rep.Cases[i].Latency = rep.Cases[i].hist.Summarize()
	}
}

// checkAlive asks for stats on a fresh connection.
func (rep *WireReport) checkAlive(cfg WireConfig) {
	fc, err := dialClient(cfg.Addr, nil, cfg.Token, "apollo11-bench-wire", cfg.Timeout)
	if err == nil {
		defer fc.c.Close()
		var m *wire.Message
		m, err = request(fc, wire.Begin(nil, wire.KindStats), "stats", cfg.Timeout) // within --timeout, like every probe
		switch {
		case isTimeout(err):
			err = fmt.Errorf("no reply with req=stats within %v", cfg.Timeout)
		case err == nil && m.Kind() != wire.KindStats:
			err = fmt.Errorf("stats answered %s code=%s", m.Type(), m.Value("code"))
		}
	}
	rep.AliveAfter = err == nil
	if err != nil {
		rep.AliveError = err.Error()
	}
}

// WriteJSON writes the tally as indented JSON.
func (rep *WireReport) WriteJSON(w io.Writer) error { return writeJSON(w, rep) }

// WriteText writes the tally as a table.
func (rep *WireReport) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "apollo11-bench wire: %d probes to %s in %.1f s (seed %d, peer max_frame %d)\n", rep.Probes, rep.Target,
		rep.Elapsed, rep.Seed, rep.MaxFrame)
	for _, s := range rep.Skipped {
		fmt.Fprintf(&b, "  skipped             %s\n", s)
	}
	fmt.Fprintf(&b, "  unexpected answers  %d\n  dial errors         %d\n", rep.Unexpected, rep.DialErrors)
	alive := "yes"
	if !rep.AliveAfter {
		alive = "NO: " + rep.AliveError
	}
	fmt.Fprintf(&b, "  peer alive after    %s\n", alive)
	if rep.Crashed != "" {
		fmt.Fprintf(&b, "  CRASH               %s\n", rep.Crashed)
	}
	if rep.TasksCreated > 0 {
		fmt.Fprintf(&b, "  tasks created       %d by the submit probes, %d cancelled after\n", rep.TasksCreated, rep.TasksCancelled)
	}
	if len(rep.TasksLeft) > 0 || rep.CleanupError != "" {
		fmt.Fprintf(&b, "  TASKS LEFT          %d on the peer (%s): %s\n", len(rep.TasksLeft), rep.CleanupError,
			strings.Join(rep.TasksLeft[:min(len(rep.TasksLeft), 50)], " "))
	}
	fmt.Fprintf(&b, "  answer latency      p50 %.3f ms, p99 %.3f ms, max %.3f ms\n\n", rep.Latency.P50, rep.Latency.P99, rep.Latency.Max)
	b.WriteString("  outcomes (all probes)\n")
	for _, k := range slices.Sorted(maps.Keys(rep.Outcomes)) {
		fmt.Fprintf(&b, "    %-40s %8d\n", k, rep.Outcomes[k])
	}
	fmt.Fprintf(&b, "\n  %-26s %6s %5s %9s  %-34s %s\n", "case", "probes", "bad", "p99 ms", "expected", "seen")
	for _, c := range rep.Cases {
		if c.Probes == 0 {
			continue
		}
		var seen []string
		for _, k := range slices.Sorted(maps.Keys(c.Outcomes)) {
			seen = append(seen, fmt.Sprintf("%s x%d", k, c.Outcomes[k]))
		}
		fmt.Fprintf(&b, "  %-26s %6d %5d %9.3f  %-34s %s\n", c.Name, c.Probes, c.Unexpected, c.Latency.P99, c.Expect,
			strings.Join(seen, ", "))
	}
	for _, e := range rep.Examples {
		fmt.Fprintf(&b, "\n  unexpected: probe %d (%s): got %s, want %s\n    sent %s\n    reproduce: %s\n",
			e.Probe, e.Case, e.Outcome, e.Expect, e.Sent, e.Reproduce)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

package bench

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"time"
)

// FloodReport is what the witness saw alone and under the flood.
// It also holds what each phase cost.
type FloodReport struct {
	Target            string  `json:"target"`
	Request           string  `json:"request"`
	Flooders          int     `json:"flooders"`
	Window            int     `json:"window"`
	WitnessIntervalMs float64 `json:"witness_interval_ms"`
	// KernelArrival says the witness's round trips end at the kernel's
	// receive timestamp of the reply.
	// Without one (not Linux) they end when the harness read it, like WitnessRead.
	KernelArrival bool `json:"kernel_arrival"`

	Alone FloodPhase `json:"alone"`
	Flood FloodPhase `json:"flood"`

	Cores        int `json:"cores"`
	HarnessProcs int `json:"harness_procs"` // the harness's GOMAXPROCS
	// MainControlNote says why the main control's figures are missing
	// when its pid was known.
	MainControlNote string `json:"main_control_note,omitempty"`
	// Conns is the witness's and the flooders' connections.
	// ConnErrors counts the flooders' connections lost during the flood.
	// The witness's loss is the run's error. ConnError is the first loss.
	Conns      int    `json:"connections"`
	ConnErrors int    `json:"connection_errors,omitempty"`
	ConnError  string `json:"connection_error,omitempty"`
	// Interrupted is set when the run was cut short (Ctrl-C).
	// The figures then cover the part that ran.
	Interrupted bool `json:"interrupted,omitempty"`
}

// FloodPhase is one phase, the witness alone or under the flood.
type FloodPhase struct {
	Seconds float64 `json:"seconds"`
	// Witness is each round trip, from the write of the request
	// to the reply's arrival at the witness's socket.
	// WitnessRead ends when the harness read it.
	// That adds the harness's own scheduling.
	Witness     Summary `json:"witness_round_trip"`
	WitnessRead Summary `json:"witness_round_trip_read"`

	// The flooders' figures, under the flood only.
	// They are requests sent and answered (error replies included) over Seconds.
	Sent         int64   `json:"sent,omitempty"`
	Answered     int64   `json:"answered,omitempty"`
	ErrorReplies int64   `json:"error_replies,omitempty"`
	AnsweredPerS float64 `json:"answered_per_s,omitempty"`
	// MinAnswered and MaxAnswered are the least and the most answered to one flooder.
	// They show how evenly the main control served the flooders.
	MinAnswered int64 `json:"min_answered_per_flooder,omitempty"`
	MaxAnswered int64 `json:"max_answered_per_flooder,omitempty"`

	PhaseCost
}

func newFloodReport(cfg FloodConfig, t *target, kernelArrival bool) *FloodReport {
	r := &FloodReport{Target: t.addr, Request: cfg.Request, Flooders: cfg.Flooders, Window: cfg.Window,
		WitnessIntervalMs: float64(cfg.WitnessInterval) / 1e6, KernelArrival: kernelArrival,
		Cores: cores, HarnessProcs: runtime.GOMAXPROCS(0), Conns: cfg.Flooders + 1}
	if t.mc != nil {
		r.Target = fmt.Sprintf("apollo11 maincontrol started by the harness (pid %d)", t.pid)
	}
	return r
}

// set fills the witness's times and the phase's cost, from a to b.
func (p *FloodPhase) set(t witnessTimes, a, b costMark) {
	p.Seconds = b.at.Sub(a.at).Seconds()
	p.Witness, p.WitnessRead = t.arrival.Summarize(), t.read.Summarize()
	p.PhaseCost = costBetween(a, b)
}

// setFlooders fills the flooders' counts over a phase of length d.
func (p *FloodPhase) setFlooders(fl []*flooder, d time.Duration) {
	p.MinAnswered = math.MaxInt64
	for _, f := range fl {
		n := f.answered.Load()
		p.Answered += n
		p.Sent += f.sent.Load()
		p.ErrorReplies += f.errs.Load()
		p.MinAnswered, p.MaxAnswered = min(p.MinAnswered, n), max(p.MaxAnswered, n)
	}
	if len(fl) == 0 {
		p.MinAnswered = 0
	}
	if d > 0 {
		p.AnsweredPerS = float64(p.Answered) / d.Seconds()
	}
}

// WriteJSON writes the report as indented JSON.
func (r *FloodReport) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteText writes the report for people.
func (r *FloodReport) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "apollo11-bench flood: %d connections pipelining %s as fast as they are answered; "+
		"a witness sends one %s at a time, %g ms apart\n", r.Flooders, r.Request, r.Request, r.WitnessIntervalMs)
	fmt.Fprintf(&b, "  target      %s\n", r.Target)
	fmt.Fprintf(&b, "  flooders    at most %s requests unanswered each\n", group(float64(r.Window)))
	if r.Interrupted {
		b.WriteString("  INTERRUPTED: the figures cover the part that ran\n")
	}
	if r.ConnErrors > 0 {
		fmt.Fprintf(&b, "  CONNECTIONS %d of %d flooders lost during the flood; first: %s\n", r.ConnErrors, r.Flooders, r.ConnError)
	}
	fmt.Fprintf(&b, "\n  %-28s %9s %9s %9s %9s %9s\n", "witness round trip (ms)", "p50", "p90", "p99", "max", "count")
	for _, row := range r.phases() {
		name := fmt.Sprintf("%s, %.1f s", row.name, row.ph.Seconds)
		if row.ph.Seconds == 0 {
			fmt.Fprintf(&b, "  %-28s %9s\n", row.name, "not run")
			continue
		}
		s := row.ph.Witness
		fmt.Fprintf(&b, "  %-28s %9.3f %9.3f %9.3f %9.3f %9s\n", name, s.P50, s.P90, s.P99, s.Max, group(float64(s.Count)))
	}
	if r.KernelArrival {
		b.WriteString("  (from the write to the reply's arrival at the witness's socket;")
	} else {
		b.WriteString("  (from the write to the harness's read of the reply;")
	}
	fmt.Fprintf(&b, " read by the harness: p50 / p99 %.3f / %.3f alone, %.3f / %.3f under flood)\n\n",
		r.Alone.WitnessRead.P50, r.Alone.WitnessRead.P99, r.Flood.WitnessRead.P50, r.Flood.WitnessRead.P99)
	if f := r.Flood; f.Seconds > 0 {
		fmt.Fprintf(&b, "  flood       %s requests answered = %s/s (%s to %s per flooder); %s sent; %d error replies\n",
			group(float64(f.Answered)), group(f.AnsweredPerS), group(float64(f.MinAnswered)), group(float64(f.MaxAnswered)),
			group(float64(f.Sent)), f.ErrorReplies)
	}
	r.writeCosts(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// namedPhase is a phase with the name the report gives it.
type namedPhase struct {
	name string
	ph   *FloodPhase
}

func (r *FloodReport) phases() []namedPhase {
	return []namedPhase{{"alone", &r.Alone}, {"under flood", &r.Flood}}
}

// writeCosts writes the CPU, memory and machine lines of both phases.
func (r *FloodReport) writeCosts(b *strings.Builder) {
	var mc, harness, machine []string
	var last *ProcReport
	for _, p := range r.phases() {
		if p.ph.Seconds == 0 {
			continue
		}
		if m := p.ph.MainControl; m != nil {
			mc = append(mc, fmt.Sprintf("%s %.0f%%", p.name, 100*m.CoreShare))
			last = m
		}
		harness = append(harness, fmt.Sprintf("%s %.0f%%", p.name, 100*p.ph.Harness.CoreShare))
		machine = append(machine, fmt.Sprintf("%s %.0f%% busy (other processes %.0f%%)", p.name, 100*p.ph.MachineBusy, 100*p.ph.OtherShare))
	}
	switch {
	case last != nil:
		fmt.Fprintf(b, "  main control  cpu %s of one core; rss %s, peak rss %s\n", strings.Join(mc, ", "), mib(last.RSS), mib(last.PeakRSS))
		if r.MainControlNote != "" {
			fmt.Fprintf(b, "                under flood unknown: %s\n", r.MainControlNote)
		}
	case r.MainControlNote != "":
		fmt.Fprintf(b, "  main control  cpu and memory unknown: %s\n", r.MainControlNote)
	default:
		b.WriteString("  main control  cpu and memory unknown (pass --pid for a main control the harness did not start)\n")
	}
	fmt.Fprintf(b, "  harness       cpu %s of one core; GOMAXPROCS %d\n", strings.Join(harness, ", "), r.HarnessProcs)
	fmt.Fprintf(b, "  machine       %d cores: %s\n", r.Cores, strings.Join(machine, ", "))
	if max(r.Alone.OtherShare, r.Flood.OtherShare) > 0.1 {
		b.WriteString("                WARNING: other load skews this run\n")
	}
}

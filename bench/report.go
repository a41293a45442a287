package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Report is the outcome of one Run.
type Report struct {
	Phase  string  `json:"phase,omitempty"`
	Target string  `json:"target"`
	Setup  string  `json:"setup"`
	Loop   string  `json:"loop"`           // closed or open
	Rate   float64 `json:"rate,omitempty"` // open loop: the intended tasks/s
	// PeakThroughput is the closed-loop peak measured first (RateOfPeak).
	PeakThroughput float64 `json:"peak_throughput,omitempty"`

	Submitted  int64            `json:"submitted"`
	Accepted   int64            `json:"accepted"` // submitted replies
	Completed  int64            `json:"completed"`
	Failed     int64            `json:"failed"` // done, but not succeeded
	Errors     int64            `json:"errors"`
	ErrorCodes map[string]int64 `json:"error_codes,omitempty"`
	Elapsed    float64          `json:"elapsed_s"`
	Throughput float64          `json:"throughput"` // completed tasks per second

	// SendLag is how late the harness wrote each submit after its intended time.
	// It is latency the harness itself added (open loop only).
	SendLag          Summary `json:"send_lag"`
	SubmitToAck      Summary `json:"submit_to_ack"`
	SubmitToDispatch Summary `json:"submit_to_dispatch"`
	// SentToDispatch is measured from when the submit was really written (open loop only).
	// It is submit -> dispatch without the harness's lateness.
	SentToDispatch Summary `json:"sent_to_dispatch"`
	// SentToArrival ends when the task frame reached the executor's socket.
	// That is the kernel's receive timestamp, Linux only.
	// It does not wait for the harness's goroutine to read it.
	// So it measures the main control's part alone.
	SentToArrival Summary `json:"sent_to_arrival"`
	SubmitToDone  Summary `json:"submit_to_done"`

	// ConnErrors counts the connections that failed during the run.
	// They are producers' and raw executors' connections.
	// ConnError is the first failure, which shows a main control that went away.
	Conns      int    `json:"connections"` // producers' and raw executors'
	ConnErrors int64  `json:"connection_errors,omitempty"`
	ConnError  string `json:"connection_error,omitempty"`

	MainControl *ProcReport `json:"main_control,omitempty"` // nil when its pid is unknown or it exited
	// Disk is what the main control wrote to disk.
	// It is nil when its pid is unknown or /proc/PID/io cannot be read.
	Disk *DiskReport `json:"disk,omitempty"`
	// MainControlNote says why MainControl is nil when a pid was known.
	MainControlNote string `json:"main_control_note,omitempty"`
	// CPUInterval is the wall time every CPU figure is taken over.
	// It runs from just before the first submit to the end of the wait for the last reply.
	// The drain is included. Elapsed ends at the last completion.
	CPUInterval float64    `json:"cpu_interval_s"`
	Harness     ProcReport `json:"harness"`
	// HarnessProcs is the harness's GOMAXPROCS.
	// It is how many threads its goroutines ran on at once.
	HarnessProcs int `json:"harness_procs"`
	// ExecutorProcs is the executor processes' CPU (process mode).
	ExecutorProcs *ProcReport `json:"executor_processes,omitempty"`
	Cores         int         `json:"cores"`
	// MachineBusy is the share of the whole machine's CPU time that was busy during the run.
	// OtherShare is the part of it used by neither the main control nor the harness.
	// That is other load, and it skews the numbers.
	MachineBusy float64 `json:"machine_busy"`
	OtherShare  float64 `json:"other_share"`

	Timeline []Second `json:"timeline"`

	// The full histograms, for plots.
	AckHist, DispatchHist, SentDispatchHist, DoneHist, LagHist *Histogram `json:"-"`
}

// ProcReport is one process's resource use during the measured interval.
type ProcReport struct {
	CPUSeconds float64 `json:"cpu_s"`
	// CoreShare is CPU time over wall time. 1 is one core busy all along.
	CoreShare float64 `json:"core_share"`
	// MachineShare is CoreShare over the number of cores.
	MachineShare float64 `json:"machine_share"`
	RSS          int64   `json:"rss_bytes,omitempty"`
	PeakRSS      int64   `json:"peak_rss_bytes,omitempty"`
}

func assemble(cfg Config, t *target, prods []*producer, fl *fleet, start, end time.Time) *Report {
	r := &Report{Cores: cores, HarnessProcs: runtime.GOMAXPROCS(0), ErrorCodes: map[string]int64{}, AckHist: NewHistogram(),
		DispatchHist: NewHistogram(), SentDispatchHist: NewHistogram(), DoneHist: NewHistogram(), LagHist: NewHistogram()}
	r.Target = t.addr
	if t.mc != nil {
		r.Target = fmt.Sprintf("apollo11 maincontrol started by the harness (pid %d, fsync %s)", t.pid, cfg.Fsync)
	}
	r.Setup = fmt.Sprintf("%d producers, %d %s executors x %d slots, payload %d B, task %s, wait=%t",
		cfg.Producers, cfg.Executors, cfg.ExecutorMode, cfg.Slots, cfg.Payload, cfg.TaskType, cfg.Wait)
	r.Loop = "closed"
	if cfg.Rate > 0 {
		r.Loop, r.Rate = "open", cfg.Rate
	} else {
		r.Setup += fmt.Sprintf(", window %d per producer", cfg.Window)
	}
	sub, disp, done := newTimeline(start), newTimeline(start), newTimeline(start)
	for _, p := range prods {
		r.Submitted += p.sent.Load()
		r.Accepted += p.acked.Load()
		r.Errors += p.errs.Load()
		r.Failed += p.failed.Load()
		for k, v := range p.codes {
			r.ErrorCodes[k] += v
		}
		r.AckHist.Merge(p.ack)
		r.DoneHist.Merge(p.doneLat)
		r.LagHist.Merge(p.lag)
		sub.merge(p.tlSubmit)
		done.merge(p.tlDone)
	}
	arrived := NewHistogram()
	for _, e := range fl.raw {
		r.DispatchHist.Merge(e.dispatch)
		r.SentDispatchHist.Merge(e.sentDispatch)
		arrived.Merge(e.sentArrived)
		disp.merge(e.tl)
	}
	if cfg.Wait {
		for _, p := range prods {
			r.Completed += p.done.Load()
		}
	} else {
		r.Completed = fl.tasks()
		if len(fl.raw) == 0 {
			r.Completed = r.Accepted
		}
		done = disp
	}
	r.Timeline = seconds(sub, disp, done)
	r.Elapsed = end.Sub(start).Seconds()
	if r.Elapsed > 0 {
		r.Throughput = float64(r.Completed) / r.Elapsed
	}
	r.SendLag = r.LagHist.Summarize()
	r.SubmitToAck = r.AckHist.Summarize()
	r.SubmitToDispatch = r.DispatchHist.Summarize()
	r.SentToDispatch = r.SentDispatchHist.Summarize()
	r.SentToArrival = arrived.Summarize()
	r.SubmitToDone = r.DoneHist.Summarize()
	return r
}

// share turns a CPU time over the run into a ProcReport.
func (r *Report) share(cpu time.Duration) ProcReport {
	p := ProcReport{CPUSeconds: cpu.Seconds()}
	if r.CPUInterval > 0 {
		p.CoreShare = p.CPUSeconds / r.CPUInterval
		p.MachineShare = p.CoreShare / float64(r.Cores)
	}
	return p
}

func (r *Report) setCPU(mc0, mc1 procSample, self time.Duration) {
	r.Harness = r.share(self)
	if mc0.ok && mc1.ok {
		p := r.share(mc1.cpu - mc0.cpu)
		p.RSS, p.PeakRSS = mc1.rss, mc1.peak
		r.MainControl = &p
	}
}

func (r *Report) setMachine(busy, total time.Duration) {
	if total <= 0 {
		return
	}
	r.MachineBusy = busy.Seconds() / total.Seconds()
	other := r.MachineBusy - r.Harness.MachineShare
	if r.ExecutorProcs != nil {
		other -= r.ExecutorProcs.MachineShare
	}
	if r.MainControl != nil {
		other -= r.MainControl.MachineShare
	}
	r.OtherShare = max(other, 0)
}

// writeJSON writes v as indented JSON. It is every report's --json form.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteText writes the report as a table for people.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	title := "apollo11-bench"
	if r.Phase != "" {
		title += " (" + strings.TrimSpace(r.Phase) + ")"
	}
	fmt.Fprintf(&b, "%s\n  target      %s\n  setup       %s\n", title, r.Target, r.Setup)
	if r.Loop == "open" {
		fmt.Fprintf(&b, "  load        open loop at %s tasks/s", group(r.Rate))
		if r.PeakThroughput > 0 {
			fmt.Fprintf(&b, " (%.0f%% of the measured peak %s tasks/s)", 100*r.Rate/r.PeakThroughput, group(r.PeakThroughput))
		}
		b.WriteString("\n")
	} else {
		b.WriteString("  load        closed loop (as fast as the window allows)\n")
	}
	fmt.Fprintf(&b, "  tasks       %s submitted, %s accepted, %s completed, %d failed, %d errors%s\n",
		group(float64(r.Submitted)), group(float64(r.Accepted)), group(float64(r.Completed)), r.Failed, r.Errors, codes(r.ErrorCodes))
	if r.ConnErrors > 0 {
		fmt.Fprintf(&b, "  CONNECTIONS %d of %d lost during the run; first: %s\n", r.ConnErrors, r.Conns, r.ConnError)
	}
	fmt.Fprintf(&b, "  elapsed     %.2f s\n  throughput  %s tasks/s\n\n", r.Elapsed, group(r.Throughput))
	fmt.Fprintf(&b, "  %-20s %9s %9s %9s %9s %9s %9s %11s\n", "latency (ms)", "p50", "p90", "p99", "p99.9", "max", "mean", "count")
	for _, row := range []struct {
		name     string
		s        Summary
		openLoop bool // measured in open loop only: left out, not n/a, otherwise
	}{{"intended -> sent", r.SendLag, true}, {"submit -> submitted", r.SubmitToAck, false},
		{"submit -> dispatch", r.SubmitToDispatch, false}, {"  sent -> dispatch", r.SentToDispatch, true},
		{"  sent -> arrival", r.SentToArrival, true},
		{"submit -> done", r.SubmitToDone, false}} {
		if row.s.Count == 0 {
			if !row.openLoop {
				fmt.Fprintf(&b, "  %-20s %9s\n", row.name, "n/a")
			}
			continue
		}
		fmt.Fprintf(&b, "  %-20s %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %11s\n", row.name, row.s.P50, row.s.P90,
			row.s.P99, row.s.P999, row.s.Max, row.s.Mean, group(float64(row.s.Count)))
	}
	b.WriteString("\n")
	b.WriteString(r.diskLine())
	if mc := r.MainControl; mc != nil {
		fmt.Fprintf(&b, "  main control  cpu %.2f s = %.0f%% of one core; rss %s, peak rss %s\n",
			mc.CPUSeconds, 100*mc.CoreShare, mib(mc.RSS), mib(mc.PeakRSS))
	} else if r.MainControlNote != "" {
		fmt.Fprintf(&b, "  main control  cpu and memory unknown: %s\n", r.MainControlNote)
	} else {
		b.WriteString("  main control  cpu and memory unknown (pass --pid for a main control the harness did not start)\n")
	}
	fmt.Fprintf(&b, "  harness       cpu %.2f s = %.0f%% of one core, %.0f%% of the machine (%d cores); GOMAXPROCS %d\n",
		r.Harness.CPUSeconds, 100*r.Harness.CoreShare, 100*r.Harness.MachineShare, r.Cores, r.HarnessProcs)
	if e := r.ExecutorProcs; e != nil {
		fmt.Fprintf(&b, "  executors     cpu %.2f s = %.0f%% of one core (all executor processes)\n", e.CPUSeconds, 100*e.CoreShare)
	}
	if r.MachineBusy > 0 {
		fmt.Fprintf(&b, "  machine       %.0f%% busy over the %.2f s the cpu figures cover", 100*r.MachineBusy, r.CPUInterval)
		fmt.Fprintf(&b, " (other processes: %.0f%% of the machine)%s\n", 100*r.OtherShare, r.bottleneck())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// bottleneck warns when the numbers say more about the machine than about
// the main control.
func (r *Report) bottleneck() string {
	var notes []string
	if r.OtherShare > 0.1 {
		notes = append(notes, "other load skews this run")
	}
	if r.MachineBusy > 0.95 && r.Harness.CoreShare > 0.5 {
		notes = append(notes, "the machine was saturated and the harness took a large share")
	}
	if len(notes) == 0 {
		return ""
	}
	return "\n                WARNING: " + strings.Join(notes, "; ")
}

func codes(m map[string]int64) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return " (" + strings.Join(parts, " ") + ")"
}

// group formats a number with thousands separators, rounded to a unit.
func group(f float64) string {
	s := fmt.Sprintf("%.0f", f)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

func mib(n int64) string {
	if n == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

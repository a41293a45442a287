package bench

import "time"

// costMark is the CPU the machine, the harness and a main control had
// used at one moment. Two marks give an interval's shares.
// They are all over the same span, so they add up, as Run's figures do.
type costMark struct {
	at        time.Time
	mc        procSample
	self      time.Duration
	busy, all time.Duration
}

func markCost(pid int) costMark {
	m := costMark{mc: sampleProc(pid), self: SelfCPU()}
	m.busy, m.all, _ = MachineCPU()
	m.at = time.Now()
	return m
}

// PhaseCost is what one interval cost.
type PhaseCost struct {
	// MainControl is nil when its pid is unknown or it exited.
	MainControl *ProcReport `json:"main_control,omitempty"`
	Harness     ProcReport  `json:"harness"`
	// MachineBusy is the busy share of the whole machine's CPU time.
	// OtherShare is the part of it used by neither the main control nor the harness.
	// That is other load, and it skews the numbers.
	MachineBusy float64 `json:"machine_busy"`
	OtherShare  float64 `json:"other_share"`
}

// costBetween returns the cost of the interval from a to b.
func costBetween(a, b costMark) PhaseCost {
	secs := b.at.Sub(a.at).Seconds()
	share := func(cpu time.Duration) ProcReport {
		p := ProcReport{CPUSeconds: cpu.Seconds()}
		if secs > 0 {
			p.CoreShare = p.CPUSeconds / secs
			p.MachineShare = p.CoreShare / float64(cores)
		}
		return p
	}
	c := PhaseCost{Harness: share(b.self - a.self)}
	other := 0.0
	if all := b.all - a.all; all > 0 {
		c.MachineBusy = (b.busy - a.busy).Seconds() / all.Seconds()
		other = c.MachineBusy - c.Harness.MachineShare
	}
	if a.mc.ok && b.mc.ok {
		p := share(b.mc.cpu - a.mc.cpu)
		p.RSS, p.PeakRSS = b.mc.rss, b.mc.peak
		c.MainControl = &p
		other -= p.MachineShare
	}
	c.OtherShare = max(other, 0)
	return c
}

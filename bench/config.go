package bench

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"time"
)

// Config is one throughput and latency run.
type Config struct {
	// Addr is a main control to load.
	// "" starts one as a child process (MainControl).
	// That lets the report include its CPU and memory.
	Addr string
	// PID is the process id of the main control at Addr, if known.
	// It gives its CPU and memory. 0 leaves them out.
	PID   int
	Token []byte // shared token when the main control has auth on
	// TLS runs the harness's connections over TLS, for a main control
	// with --tls-cert (given in MainControlArgs when started). nil:
	// plaintext. Only raw executors take it.
	TLS *tls.Config

	// Settings of a main control the harness starts (Addr == "").
	Binary          string   // apollo11 binary; "" is DefaultBinary
	Fsync           string   // off (no data dir), never, batch or always
	DataDir         string   // "" means a temp dir (with persistence on)
	MainControlArgs []string // more maincontrol flags

	Producers    int    // client connections submitting (default 4)
	Executors    int    // executors (default 8)
	ExecutorMode string // raw (in-process, default) or process (apollo11 executor)
	Slots        int    // slots per executor (default 256)
	Payload      int    // bytes of arg.p in each task (default 16)
	TaskType     string // default echo
	Wait         bool   // submit with wait=true and time submit-to-done
	Tasks        int64  // tasks to submit; 0 with Duration: as many as fit
	Duration     time.Duration
	Rate         float64 // total tasks/s, open loop; 0 is closed loop
	RateOfPeak   float64 // > 0: measure the closed-loop peak first, then run at this fraction of it
	PeakDuration time.Duration
	Window       int // closed loop: tasks in flight per producer (default 1024)
	// PaceTick is the shortest sleep of an open-loop producer.
	// Tasks falling due meanwhile go out together in one write.
	// Longer ticks cost the harness less CPU.
	// They add at most the tick to the measured latency (shown as intended -> sent).
	// 0 sleeps until each task's own time.
	PaceTick     time.Duration
	Drain        time.Duration // wait for stragglers after the last submit (default 30 s)
	ExecutorArgs []string      // more `apollo11 executor` flags (process mode)

	Progress io.Writer // progress bar destination; nil: none
}

// ErrBadConfig wraps invalid settings.
var ErrBadConfig = errors.New("bench: invalid configuration")

// withDefaults fills zero values and checks the rest.
func (c Config) withDefaults() (Config, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Producers, 4)
	def(&c.Executors, 8)
	c.Executors = max(c.Executors, 0) // negative: none
	def(&c.Slots, 256)
	def(&c.Window, 1024)
	if c.Payload < 0 {
		return c, fmt.Errorf("%w: payload %d", ErrBadConfig, c.Payload)
	}
	if c.TaskType == "" {
		c.TaskType = "echo"
	}
	if c.ExecutorMode == "" {
		c.ExecutorMode = "raw"
	}
	if c.Fsync == "" {
		c.Fsync = "off"
	}
	if c.Drain == 0 {
		c.Drain = 30 * time.Second
	}
	if c.PeakDuration == 0 {
		c.PeakDuration = 5 * time.Second
	}
	switch {
	case c.Producers < 1 || c.Slots < 1 || c.Window < 1:
		return c, fmt.Errorf("%w: producers, slots and window must be positive", ErrBadConfig)
	case c.ExecutorMode != "raw" && c.ExecutorMode != "process":
		return c, fmt.Errorf("%w: executor mode %q: want raw or process", ErrBadConfig, c.ExecutorMode)
	case c.Fsync != "off" && c.Fsync != "never" && c.Fsync != "batch" && c.Fsync != "always":
		return c, fmt.Errorf("%w: fsync %q: want off, never, batch or always", ErrBadConfig, c.Fsync)
	case c.Tasks <= 0 && c.Duration <= 0:
		return c, fmt.Errorf("%w: give a task count or a duration", ErrBadConfig)
	case c.Rate < 0 || c.RateOfPeak < 0 || c.RateOfPeak > 1:
		return c, fmt.Errorf("%w: rate must be positive and a fraction of peak at most 1", ErrBadConfig)
	case c.PID < 0:
		return c, fmt.Errorf("%w: --pid %d: want a process id", ErrBadConfig, c.PID)
	case c.PID > 0 && c.Addr == "":
		return c, fmt.Errorf("%w: --pid is for a main control at --addr; the harness knows the pid of one it starts", ErrBadConfig)
	}
	if c.PID > 0 {
		// Checked now, not found missing after the run.
		// A mistyped pid would silently drop the main control's figures.
		if _, err := ProcCPU(c.PID); err != nil {
			return c, fmt.Errorf("%w: --pid %d: no such process (%v)", ErrBadConfig, c.PID, err)
		}
	}
	return c, nil
}

// total returns the tasks to submit (negative: until Duration ends).
func (c Config) total() int64 {
	switch {
	case c.Tasks > 0:
		return c.Tasks
	case c.Rate > 0:
		return int64(c.Rate * c.Duration.Seconds())
	}
	return -1
}

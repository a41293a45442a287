package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// FailoverConfig is scenario 5.
// It times how long a task takes to reach another executor
// when the executor holding it dies or leaves with bye.
type FailoverConfig struct {
	Binary string // apollo11, for the main control (see DefaultBinary)
	// Harness runs the raw victim as `Harness executor`, that is apollo11-bench.
	// "" is this executable.
	Harness          string
	HeartbeatTimeout time.Duration // the main control's --heartbeat-timeout (default 2 s)
	Rounds           int           // per variant (default 5)
	// Victim is how the executor that dies runs.
	// "raw" is an `apollo11-bench executor` child process speaking the wire directly.
	// "process" is a real `apollo11 executor` running a sleep task.
	Victim string
	// TokenFile is a shared token. The main control requires it (auth on).
	// Every executor and client of the run proves it. "" is auth off.
	TokenFile string
	Args      []string // more maincontrol flags
	Progress  io.Writer
}

// FailoverReport holds each variant's re-dispatch times.
type FailoverReport struct {
	HeartbeatTimeoutMs int64             `json:"heartbeat_timeout_ms"`
	Victim             string            `json:"victim"`
	Variants           []FailoverVariant `json:"variants"`
}

// FailoverVariant is one way of losing an executor.
type FailoverVariant struct {
	Name   string    `json:"name"`
	Expect string    `json:"expect"`
	Times  []float64 `json:"times_ms"` // per round: loss to re-dispatch
	Min    float64   `json:"min_ms"`
	Median float64   `json:"median_ms"`
	Max    float64   `json:"max_ms"`
}

// taskType is what the victim serves.
// Raw victims serve a type of their own, and a real executor the built-in sleep.
func (f *failover) taskType() string {
	if f.cfg.Victim == "process" {
		return "sleep"
	}
	return "bench-failover"
}

// RunFailover starts a main control with a short heartbeat timeout.
// For each variant and round, a victim executor takes a task and is then lost.
// It times until a rescuer executor receives the task again.
func RunFailover(ctx context.Context, cfg FailoverConfig) (*FailoverReport, error) {
	if cfg.HeartbeatTimeout <= 0 {
		cfg.HeartbeatTimeout = 2 * time.Second
	}
	if cfg.Rounds <= 0 {
		cfg.Rounds = 5
	}
	if cfg.Victim == "" {
		cfg.Victim = "raw"
	}
	if cfg.Victim != "raw" && cfg.Victim != "process" {
		return nil, fmt.Errorf("%w: victim %q: want raw or process", ErrBadConfig, cfg.Victim)
	}
	token, tokenArgs, err := loadTokenFile(cfg.TokenFile)
	if err != nil {
		return nil, err
	}
	args := append(append([]string{"--heartbeat-timeout", cfg.HeartbeatTimeout.String()}, tokenArgs...), cfg.Args...)
	mc, err := StartMainControl(ctx, MainControlOptions{Binary: cfg.Binary, Args: args})
	if err != nil {
		return nil, err
	}
	defer mc.Close()
	client, err := dialClient(mc.Addr, nil, token, "apollo11-bench-failover", 10*time.Second)
	if err != nil {
		return nil, err
	}
	defer client.c.Close()
	f := &failover{cfg: cfg, mc: mc, client: client, token: token}
	rep := &FailoverReport{HeartbeatTimeoutMs: cfg.HeartbeatTimeout.Milliseconds(), Victim: cfg.Victim}
	hb := cfg.HeartbeatTimeout
	variants := []struct {
		name, expect string
		mode         ExecMode
		lose         func(v *victim) error
	}{
		{"kill -9, task running", fmt.Sprintf("heartbeat timeout (%s) + retry delay (0.5-1 s)", hb), ExecHold, (*victim).kill},
		{"kill -9, task dispatched", fmt.Sprintf("heartbeat timeout (%s)", hb), ExecNoStart, (*victim).kill},
		{"bye, task running", "milliseconds (the victim is an in-process raw executor)", ExecHold, (*victim).bye},
	}
	for _, v := range variants {
		if cfg.Victim == "process" && v.mode == ExecNoStart {
			continue // a real executor always starts its tasks
		}
		fv := FailoverVariant{Name: v.name, Expect: v.expect}
		for round := range cfg.Rounds {
			if cfg.Progress != nil {
				fmt.Fprintf(cfg.Progress, "\r%s: round %d of %d   ", v.name, round+1, cfg.Rounds)
			}
			d, err := f.round(ctx, v.mode, v.lose, v.name == "bye, task running")
			if err != nil {
				return nil, fmt.Errorf("%s, round %d: %w\nmain control log:\n%s", v.name, round+1, err, tail(mc.Stderr(), 4000))
			}
			fv.Times = append(fv.Times, float64(d.Microseconds())/1000)
		}
		fv.Min, fv.Median, fv.Max = spread(fv.Times)
		rep.Variants = append(rep.Variants, fv)
	}
	if cfg.Progress != nil {
		fmt.Fprintln(cfg.Progress)
	}
	return rep, nil
}

// spread returns the min, median and max of xs.
// With an even count, the median is the mean of the two middle values.
// Taking the upper one would make the median of two rounds their max.
func spread(xs []float64) (lo, med, hi float64) {
	s := append([]float64(nil), xs...)
	for i := range s { // insertion sort: a handful of rounds
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	n := len(s)
	med = s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return s[0], med, s[n-1]
}

type failover struct {
	cfg    FailoverConfig
	mc     *MainControl
	client *frameConn
	token  []byte
	n      int
}

// victim is the executor that is lost.
// It is a child process, or for bye an in-process raw executor.
type victim struct {
	id   string
	cmd  *exec.Cmd
	raw  *RawExecutor
	stop context.CancelFunc
	lost time.Time
}

func (v *victim) kill() error {
	v.lost = time.Now()
	if err := v.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	_ = v.cmd.Wait()
	return nil
}

func (v *victim) bye() error {
	v.lost = time.Now()
	return v.raw.Bye("bench failover")
}

func (v *victim) close() {
	if v.cmd != nil && v.cmd.ProcessState == nil {
		_ = v.cmd.Process.Kill()
		_ = v.cmd.Wait()
	}
	if v.raw != nil {
		v.stop()
		_ = v.raw.Close()
	}
}

// round runs one loss and returns the time from loss to re-dispatch.
func (f *failover) round(ctx context.Context, mode ExecMode, lose func(*victim) error, inProcess bool) (time.Duration, error) {
	f.n++
	v, err := f.startVictim(ctx, mode, inProcess)
	if err != nil {
		return 0, err
	}
	defer v.close()
	taskID, err := f.submit()
	if err != nil {
		return 0, err
	}
	want := "running"
	if mode == ExecNoStart {
		want = "dispatched"
	}
	if err := f.waitState(ctx, taskID, want, v.id); err != nil {
		return 0, err
	}
	// The rescuer registers only now, so the task went to the victim.
	got := make(chan string, 4)
	rescuer, err := DialExecutor(ExecutorOptions{Addr: f.mc.Addr, ID: fmt.Sprintf("rescuer-%d", f.n),
		Types: []string{f.taskType()}, Slots: 1, Mode: ExecEcho, BufSize: 4096, Token: f.token})
	if err != nil {
		return 0, err
	}
	var at time.Time
	rescuer.OnTask = func(id, _ string) {
		if at.IsZero() {
			at = time.Now()
		}
		select {
		case got <- strings.Clone(id):
		default:
		}
	}
	rctx, stopRescuer := context.WithCancel(ctx)
	rdone := make(chan struct{})
	go func() { defer close(rdone); _ = rescuer.Run(rctx) }()
	defer func() { _ = rescuer.Bye("round over"); stopRescuer(); <-rdone }()
	if err := lose(v); err != nil {
		return 0, err
	}
	timeout := f.cfg.HeartbeatTimeout + 30*time.Second
	select {
	case id := <-got:
		if id != taskID {
			return 0, fmt.Errorf("the rescuer got task %s, not %s", id, taskID)
		}
		// Let the rescuer's result land before its bye.
		if err := f.waitState(ctx, taskID, "succeeded", ""); err != nil {
			return 0, err
		}
		return at.Sub(v.lost), nil
	case <-time.After(timeout):
		return 0, fmt.Errorf("task %s not re-dispatched %s after the loss", taskID, timeout)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (f *failover) startVictim(ctx context.Context, mode ExecMode, inProcess bool) (*victim, error) {
	v := &victim{id: fmt.Sprintf("victim-%d", f.n)}
	if inProcess {
		e, err := DialExecutor(ExecutorOptions{Addr: f.mc.Addr, ID: v.id, Types: []string{f.taskType()},
			Slots: 1, Mode: mode, BufSize: 4096, Token: f.token})
		if err != nil {
			return nil, err
		}
		vctx, stop := context.WithCancel(ctx)
		v.raw, v.stop = e, stop
		go func() { _ = e.Run(vctx) }()
		return v, nil
	}
	bin := f.mc.opts.Binary
	var args []string
	if f.cfg.Victim == "process" {
		args = []string{"executor", "--connect", f.mc.Addr, "--id", v.id, "--types", f.taskType(), "--slots", "1"}
	} else {
		bin = f.cfg.Harness
		if bin == "" {
			exe, err := os.Executable()
			if err != nil {
				return nil, err
			}
			bin = exe
		}
		args = []string{"executor", "--connect", f.mc.Addr, "--id", v.id, "--types", f.taskType(),
			"--slots", "1", "--mode", string(mode)}
	}
	if f.cfg.TokenFile != "" {
		args = append(args, "--token-file", f.cfg.TokenFile)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = childEnv()
	cmd.Stderr = &tailBuffer{max: 8 << 10} // its log, unread unless debugging
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	v.cmd = cmd
	return v, nil
}

// submit submits one failover task and returns its id.
func (f *failover) submit() (string, error) {
	b := wire.Begin(nil, wire.KindSubmit)
	b.Str("task_type", f.taskType())
	b.Str("max_attempts", "10")
	if f.cfg.Victim == "process" {
		b.Str("arg.ms", "600000") // the sleep handler's duration
	}
	m, err := request(f.client, b, "s"+strconv.Itoa(f.n), 10*time.Second)
	if err != nil {
		return "", err
	}
	if m.Kind() != wire.KindSubmitted {
		return "", fmt.Errorf("%w: submit answered %s code=%s", ErrRefused, m.Type(), m.Value("code"))
	}
	return m.Value("task_id"), nil
}

// waitState polls the task until it is in state on executor exec.
// Any executor will do when exec is "".
func (f *failover) waitState(ctx context.Context, id, state, exec string) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		b := wire.Begin(nil, wire.KindQuery)
		b.Str("task_id", id)
		m, err := request(f.client, b, "q"+id, 10*time.Second)
		if err != nil {
			return err
		}
		if m.Value("state") == state && (exec == "" || m.Value("executor_id") == exec) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("task %s is %s on %q, not %s on %s", id, m.Value("state"), m.Value("executor_id"), state, exec)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// WriteJSON writes the report as indented JSON.
func (r *FailoverReport) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteText writes the report for people.
func (r *FailoverReport) WriteText(w io.Writer) error {
	var b []byte
	b = fmt.Appendf(b, "apollo11-bench failover: loss to re-dispatch on another executor (--heartbeat-timeout %d ms, victim %s)\n",
		r.HeartbeatTimeoutMs, r.Victim)
	b = fmt.Appendf(b, "  %-26s %10s %10s %10s  %s\n", "variant", "min ms", "median ms", "max ms", "expected")
	for _, v := range r.Variants {
		b = fmt.Appendf(b, "  %-26s %10.1f %10.1f %10.1f  %s\n", v.Name, v.Min, v.Median, v.Max, v.Expect)
	}
	_, err := w.Write(b)
	return err
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

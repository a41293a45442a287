package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/wire"
)

// WireConfig is a protocol probe run.
// It sends valid and damaged frames to a main control at a set rate.
// The main control may be ours or anyone's implementation of wire-v1.
// Each probe has its own connection, and the answers are checked against the spec.
type WireConfig struct {
	Addr   string // "" starts a main control as a child process
	Binary string // apollo11 binary for that; "" is DefaultBinary
	// Fsync and Args set up that started main control (MainControlOptions).
	Fsync string
	Args  []string
	Token []byte

	Rate     float64       // probes per second (default 200)
	Duration time.Duration // default 10 s
	Seed     uint64        // same seed, same probes
	// Probe, when >= 0, runs only probe number Probe of the seed's sequence.
	// It reports its bytes, which is how to reproduce a finding.
	Probe       int
	Timeout     time.Duration // how long to wait for an answer (default 2 s)
	Linger      time.Duration // how long to watch for a close after an answer (default 200 ms)
	Concurrency int           // probes in flight at most (default 256)
	Cases       string        // only cases whose name contains this
	// MaxFrame is the peer's largest payload.
	// The probes that send or announce more are built from it.
	// 0 reads it from the peer's welcome before the run.
	// A welcome without one gives 1 MiB, the spec's default.
	MaxFrame uint64
	Progress io.Writer
}

func (c WireConfig) withDefaults() WireConfig {
	if c.Rate <= 0 {
		c.Rate = 200
	}
	if c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 2 * time.Second
	}
	if c.Linger <= 0 {
		c.Linger = 200 * time.Millisecond
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 256
	}
	return c
}

// probeResult is one probe's outcome.
type probeResult struct {
	idx     int
	c       *wireCase
	sent    []byte
	expect  string // what the peer must answer (the case's, or frame_too_large for a frame over max_frame)
	outcome string
	created []string      // task ids of submitted replies (without duplicate=true)
	latency time.Duration // -1: no answer
	dialErr error
}

// RunWire runs the probes and tallies the answers.
// It returns an error only when it could not run at all.
// A peer that misbehaves is in the report.
func RunWire(ctx context.Context, cfg WireConfig) (*WireReport, error) {
	cfg = cfg.withDefaults()
	_, _ = RaiseFileLimit()
	var mc *MainControl
	if cfg.Addr == "" {
		var err error
		if mc, err = StartMainControl(ctx, MainControlOptions{Binary: cfg.Binary, Fsync: cfg.Fsync, Args: cfg.Args}); err != nil {
			return nil, err
		}
		defer mc.Close()
		cfg.Addr = mc.Addr
	}
	cases := wireCases
	if cfg.Cases != "" {
		cases = nil
		for _, c := range wireCases {
			if strings.Contains(c.name, cfg.Cases) {
				cases = append(cases, c)
			}
		}
		if len(cases) == 0 {
			return nil, fmt.Errorf("%w: no probe case matches %q", ErrBadConfig, cfg.Cases)
		}
	}
	if cfg.MaxFrame == 0 {
		cfg.MaxFrame = peerMaxFrame(cfg)
	}
	var skipped []string
	cases = slices.DeleteFunc(slices.Clone(cases), func(c wireCase) bool {
		if c.buildOver != nil && c.buildOver(probeRand(0, 0), cfg.MaxFrame) == nil {
			skipped = append(skipped, fmt.Sprintf("%s (max_frame %d: no header can announce more)", c.name, cfg.MaxFrame))
			return true
		}
		return false
	})
	if len(cases) == 0 {
		return nil, fmt.Errorf("%w: no probe case can be built for this peer: %s", ErrBadConfig, strings.Join(skipped, "; "))
	}
	rep := newWireReport(cfg, cases)
	rep.Skipped = skipped
	start := time.Now()
	if cfg.Probe >= 0 {
		rep.add(cfg, runProbe(cfg, cases, cfg.Probe))
	} else {
		runProbes(ctx, cfg, cases, start, rep)
	}
	rep.Elapsed = time.Since(start).Seconds()
	rep.finish()
	rep.checkAlive(cfg)
	if mc == nil {
		// A main control the harness started goes away with its tasks.
		// Anyone else's keeps them, pending forever if nobody serves bench-wire-probe.
		// They count against its --max-pending.
		rep.cancelCreated(cfg)
	}
	if mc != nil {
		select {
		case <-mc.exited:
			rep.Crashed = "the main control exited during the run: " + mc.Stderr()
		default:
		}
	}
	return rep, ctx.Err()
}

// runProbes sends probes on an open-loop schedule, at most Concurrency at once.
func runProbes(ctx context.Context, cfg WireConfig, cases []wireCase, start time.Time, rep *WireReport) {
	total := int64(cfg.Rate * cfg.Duration.Seconds())
	pacer := NewPacer(start, cfg.Rate, total, 0, 1)
	results := make(chan probeResult, cfg.Concurrency)
	sem := make(chan struct{}, cfg.Concurrency)
	var wg sync.WaitGroup
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		bar := newProgress(cfg.Progress, "", total, 0, start)
		var n int64
		for r := range results {
			rep.add(cfg, r)
			n++
			bar.update(n, n)
		}
		bar.finish()
	}()
	for i := range total {
		if d := time.Until(pacer.Intended(i)); d > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results <- runProbe(cfg, cases, int(i))
		}()
	}
	wg.Wait()
	close(results)
	<-collected
}

// probeRand is the random source of probe i.
// The same seed and index give the same probe.
func probeRand(seed uint64, i int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(i)))
}

// runProbe sends probe i and classifies the answer.
func runProbe(cfg WireConfig, cases []wireCase, i int) probeResult {
	r := probeRand(cfg.Seed, i)
	c := &cases[r.IntN(len(cases))]
	req := "p" + strconv.Itoa(i)
	payload := c.probeBytes(r, req, cfg.MaxFrame)
	res := probeResult{idx: i, c: c, sent: payload, expect: c.expectFor(payload, cfg.MaxFrame), latency: -1}
	conn, err := net.DialTimeout("tcp", cfg.Addr, cfg.Timeout)
	if err != nil {
		res.dialErr = err
		return res
	}
	defer conn.Close()
	fc := newFrameConn(conn)
	_ = conn.SetDeadline(time.Now().Add(cfg.Timeout))
	welcome, err := fc.next()
	if err != nil || welcome.Kind() != wire.KindWelcome {
		res.outcome = "no welcome"
		return res
	}
	if bad := welcomeProblem(welcome); bad != "" {
		res.outcome = "bad welcome: " + bad
		return res
	}
	if c.hello {
		nonce := welcome.Value("nonce")
		kv := []string{"type", "hello", "req", "h", "client", "apollo11-bench-wire"}
		if cfg.Token != nil {
			kv = append(kv, "auth", auth.Sign(cfg.Token, nonce))
		}
		if err := fc.write(frame(kv...)); err != nil {
			res.outcome = "hello failed: " + errClass(err)
			return res
		}
		m, err := fc.next()
		switch {
		case err != nil:
			res.outcome = "hello: " + readOutcome("", err) // closed, timed out, sent what does not decode
			return res
		case m.Kind() != wire.KindHelloOK:
			res.outcome = "hello refused: " + answerName(m)
			return res
		}
	}
	sentAt := time.Now()
	if err := fc.write(payload); err != nil {
		res.outcome = "write failed: " + errClass(err)
		return res
	}
	_ = conn.SetDeadline(sentAt.Add(cfg.Timeout))
	want := max(c.replies, 1)
	reqs := sentReqs(payload)
	var first *wire.Message
	var outcome string
	wrongReq := false
	for got := 0; got < want; got++ {
		m, err := fc.next()
		if err != nil {
			outcome = readOutcome(outcome, err)
			break
		}
		wrongReq = wrongReq || !reqAnswered(m, reqs)
		res.noteCreated(m)
		if got == 0 {
			res.latency = time.Since(sentAt)
			first = m
			outcome = answerName(m)
		}
	}
	if first != nil && !strings.HasSuffix(outcome, "timeout") && !strings.Contains(outcome, "close") {
		// Watch for a close after the answer.
		_ = conn.SetDeadline(time.Now().Add(cfg.Linger))
		for {
			m, err := fc.next()
			if err == nil {
				res.noteCreated(m)
			} else {
				if !isTimeout(err) {
					outcome += "+close"
				}
				break
			}
		}
	}
	if wrongReq {
		outcome += "+wrong-req" // matches no expectation: every reply carries its request's req
	}
	res.outcome = outcome
	return res
}

// peerMaxFrame reads the max_frame of the peer's welcome.
// The oversize probes are built from that size.
// A peer that cannot be reached gets the spec's default.
// So does one whose welcome has no valid max_frame.
// The probes then report what is wrong with it.
func peerMaxFrame(cfg WireConfig) uint64 {
	conn, err := net.DialTimeout("tcp", cfg.Addr, cfg.Timeout)
	if err != nil {
		return wire.DefaultMaxFrame
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(cfg.Timeout))
	m, err := newFrameConn(conn).next()
	if err != nil || m.Kind() != wire.KindWelcome {
		return wire.DefaultMaxFrame
	}
	n, err := m.UintOr("max_frame", wire.DefaultMaxFrame)
	if err != nil || n == 0 {
		return wire.DefaultMaxFrame
	}
	// A 4-byte header cannot announce more than the uint32 maximum.
	// So a larger max_frame is that maximum here, as no frame can exceed it.
	return min(n, math.MaxUint32)
}

// noteCreated keeps the id of a task that reply m says the probe created.
// That is a valid submit's task, or a mutated submit's, whatever its task type.
// A duplicate=true reply names a task someone else created.
// That task is not the harness's to cancel.
func (res *probeResult) noteCreated(m *wire.Message) {
	if m.Kind() == wire.KindSubmitted && m.Value("duplicate") != "true" {
		if id := m.Value("task_id"); id != "" {
			res.created = append(res.created, strings.Clone(id))
		}
	}
}

// cancelBatch is how many cancels go out before their replies are read.
const cancelBatch = 256

// cancelCreated cancels every task the probes created.
// It pipelines the cancels on one connection.
// A task that ended meanwhile (illegal_transition) counts as cleaned up too.
// So does one that was dropped (unknown_task).
// The ids it could not cancel are reported.
func (rep *WireReport) cancelCreated(cfg WireConfig) {
	rep.TasksCreated = int64(len(rep.created))
	if len(rep.created) == 0 {
		return
	}
	left := map[string]bool{}
	for _, id := range rep.created {
		left[id] = true
	}
	defer func() {
		rep.TasksCancelled = rep.TasksCreated - int64(len(left))
		rep.TasksLeft = slices.SortedFunc(maps.Keys(left), func(a, b string) int {
			return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b)) // numeric order
		})
	}()
	timeout := max(cfg.Timeout, 5*time.Second) // the run is over: no hurry, but no hang either
	fc, err := dialClient(cfg.Addr, nil, cfg.Token, "apollo11-bench-wire", timeout)
	if err != nil {
		rep.CleanupError = "cannot connect to cancel the tasks the probes created: " + err.Error()
		return
	}
	defer fc.c.Close()
	for batch := range slices.Chunk(rep.created, cancelBatch) {
		var out []byte
		for _, id := range batch {
			b := wire.Begin(out, wire.KindCancel)
			b.Str("req", "c"+id)
			b.Str("task_id", id)
			if out, err = b.Finish(); err != nil {
				rep.CleanupError = "cannot encode a cancel: " + err.Error()
				return
			}
		}
		_ = fc.c.SetDeadline(time.Now().Add(timeout))
		if err := fc.write(out); err != nil {
			rep.CleanupError = "cannot send the cancels: " + err.Error()
			return
		}
		for range batch {
			m, err := fc.next()
			if err != nil {
				rep.CleanupError = "no reply to a cancel: " + err.Error()
				return
			}
			id, ok := strings.CutPrefix(m.Value("req"), "c")
			switch code := wire.Code(m.Value("code")); {
			case !ok || !left[id]:
			case m.Kind() == wire.KindCancelled, code == wire.CodeIllegalTransition, code == wire.CodeUnknownTask:
				delete(left, id)
			case rep.CleanupError == "":
				rep.CleanupError = fmt.Sprintf("cancel of task %s answered %s code=%s", id, m.Type(), code)
			}
		}
	}
}

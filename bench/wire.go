package bench

import (
	"cmp"
	"context"
	"errors"
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
	"syscall"
	"time"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/wire"
)

// WireConfig is a protocol probe run: valid and damaged frames sent to a
// main control (ours or anyone's implementation of wire-v1) at a set rate,
// each probe on its own connection, with the answers checked against the
// spec.
type WireConfig struct {
	Addr   string // "" starts a main control as a child process
	Binary string // apollo11 binary for that; "" means this executable
	// Fsync and Args set up that started main control (MainControlOptions).
	Fsync string
	Args  []string
	Token []byte

	Rate     float64       // probes per second (default 200)
	Duration time.Duration // default 10 s
	Seed     uint64        // same seed, same probes
	// Probe, when >= 0, runs only probe number Probe of the seed's
	// sequence and reports its bytes: how to reproduce a finding.
	Probe       int
	Timeout     time.Duration // how long to wait for an answer (default 2 s)
	Linger      time.Duration // how long to watch for a close after an answer (default 200 ms)
	Concurrency int           // probes in flight at most (default 256)
	Cases       string        // only cases whose name contains this
	// MaxFrame is the peer's largest payload, which the probes that send
	// more (or announce more) are built from; 0 reads it from the
	// peer's welcome before the run (1 MiB, the spec's default, when that
	// has none).
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

// RunWire runs the probes and tallies the answers. It returns an error only
// when it could not run at all; a peer that misbehaves is in the report.
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
		// A main control the harness started goes away with its tasks;
		// anyone else's keeps them, pending forever if nobody serves
		// bench-wire-probe, counting against its --max-pending.
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

func newWireReport(cfg WireConfig, cases []wireCase) *WireReport {
	rep := &WireReport{Target: cfg.Addr, Seed: cfg.Seed, MaxFrame: cfg.MaxFrame, Outcomes: map[string]int64{}, hist: NewHistogram()}
	for _, c := range cases {
		rep.Cases = append(rep.Cases, WireCaseReport{Name: c.name, Expect: c.expect, Outcomes: map[string]int64{},
			hist: NewHistogram()})
	}
	return rep
}

// runProbes sends probes on an open-loop schedule, at most Concurrency at
// once.
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

// probeRand is the random source of probe i: the same seed and index give
// the same probe.
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
	if err != nil || welcome.Type() != "welcome" {
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
		case m.Type() != "hello_ok":
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

// peerMaxFrame reads the max_frame of the peer's welcome: the size the
// oversize probes are built from. A peer that cannot be reached, or whose
// welcome has no valid max_frame, gets the spec's default; the probes
// then report what is wrong with it.
func peerMaxFrame(cfg WireConfig) uint64 {
	conn, err := net.DialTimeout("tcp", cfg.Addr, cfg.Timeout)
	if err != nil {
		return wire.DefaultMaxFrame
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(cfg.Timeout))
	m, err := newFrameConn(conn).next()
	if err != nil || m.Type() != "welcome" {
		return wire.DefaultMaxFrame
	}
	n, err := m.UintOr("max_frame", wire.DefaultMaxFrame)
	if err != nil || n == 0 {
		return wire.DefaultMaxFrame
	}
	// A 4-byte header cannot announce more than the uint32 maximum: a
	// larger max_frame is that maximum here (no frame can exceed it).
	return min(n, math.MaxUint32)
}

// noteCreated keeps the id of a task that reply m says the probe created:
// a valid submit's, and a mutated submit's, whatever its task type. A
// duplicate=true reply names a task someone else created, which is not
// the harness's to cancel.
func (res *probeResult) noteCreated(m *wire.Message) {
	if m.Type() == "submitted" && m.Value("duplicate") != "true" {
		if id := m.Value("task_id"); id != "" {
			res.created = append(res.created, strings.Clone(id))
		}
	}
}

// cancelBatch is how many cancels go out before their replies are read.
const cancelBatch = 256

// cancelCreated cancels every task the probes created, pipelining the
// cancels on one connection. A task that ended meanwhile
// (illegal_transition) or was dropped (unknown_task) counts as cleaned
// up too; the ids it could not cancel are reported.
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
	fc, err := dialClient(cfg.Addr, cfg.Token, "apollo11-bench-wire", timeout)
	if err != nil {
		rep.CleanupError = "cannot connect to cancel the tasks the probes created: " + err.Error()
		return
	}
	defer fc.c.Close()
	for batch := range slices.Chunk(rep.created, cancelBatch) {
		var out []byte
		for _, id := range batch {
			b := wire.Begin(out, "cancel")
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
			case m.Type() == "cancelled", code == wire.CodeIllegalTransition, code == wire.CodeUnknownTask:
				delete(left, id)
			case rep.CleanupError == "":
				rep.CleanupError = fmt.Sprintf("cancel of task %s answered %s code=%s", id, m.Type(), code)
			}
		}
	}
}

// answerName is an answer as outcomes name it: its type, and for an error
// its code ("error:bad_request").
func answerName(m *wire.Message) string {
	if m.Type() == "error" {
		return "error:" + m.Value("code")
	}
	return m.Type()
}

// welcomeProblem names what in a welcome breaks spec section 3 (proto=1,
// a nonce of 32 lower-case hex characters, auth none or hmac-sha256, a
// max_frame), or "" when nothing does.
func welcomeProblem(m *wire.Message) string {
	if m.Value("proto") != "1" {
		return "proto is not 1"
	}
	if n := m.Value("nonce"); len(n) != 32 || strings.Trim(n, "0123456789abcdef") != "" {
		return "nonce is not 32 lower-case hex characters"
	}
	if a := m.Value("auth"); a != "none" && a != "hmac-sha256" {
		return "auth is not none or hmac-sha256"
	}
	if _, err := wire.ParseWelcome(m); err != nil || !m.Has("max_frame") {
		return "no valid max_frame"
	}
	return ""
}

// sentReqs returns the req of every whole frame in payload that a reply
// must echo: present and valid (at most 64 bytes). Damaged bytes yield
// none.
func sentReqs(payload []byte) map[string]bool {
	reqs := map[string]bool{}
	var d wire.Decoder
	for len(payload) > 0 {
		m, n, err := d.Decode(payload)
		if err != nil || m == nil {
			break
		}
		if r, ok := m.Get("req"); ok && len(r) <= 64 {
			reqs[r] = true
		}
		payload = payload[n:]
	}
	return reqs
}

// reqAnswered says whether m carries one of the reqs sent (spec section
// 3: every reply carries its request's req). Errors about the framing
// itself may lack it: the request was never read.
func reqAnswered(m *wire.Message, reqs map[string]bool) bool {
	if len(reqs) == 0 {
		return true
	}
	if m.Type() == "error" {
		switch wire.Code(m.Value("code")) {
		case wire.CodeMalformed, wire.CodeFrameTooLarge:
			return true
		}
	}
	r, ok := m.Get("req")
	return ok && reqs[r]
}

// readOutcome names how a read ended when no (further) frame came.
func readOutcome(sofar string, err error) string {
	var what string
	switch {
	case isTimeout(err):
		what = "timeout"
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, net.ErrClosed):
		what = "close"
	case errors.Is(err, wire.ErrMalformed), errors.Is(err, wire.ErrFrameTooLarge):
		what = "malformed-answer"
	default:
		what = errClass(err)
	}
	if sofar == "" {
		return what
	}
	if what == "timeout" {
		return sofar + "+missing-replies"
	}
	return sofar + "+" + what
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func errClass(err error) string {
	var se syscall.Errno
	if errors.As(err, &se) {
		return se.Error()
	}
	return "error"
}

// matches reports whether outcome is one of expect's alternatives.
func matches(expect, outcome string) bool {
	for alt := range strings.SplitSeq(expect, "|") {
		if alt == outcome || alt == "any" && anyAnswer(outcome) {
			return true
		}
	}
	return false
}

// anyAnswer says whether outcome is one the "any" cases accept: damaged
// bytes were sent after a good handshake and the peer either answered
// with one well-formed frame carrying no req but the probe's (an error
// or, when the damage left a valid request, its reply), or closed the
// connection, with or without such an answer first. What it does not
// accept is everything that shows a fault of the peer: no answer and the
// connection left open ("timeout", the hang the cases exist to find); an
// answer that does not decode; a reply with a foreign req; an error
// malformed or frame_too_large left open, which spec section 1 and 2
// require closing; and a handshake or welcome that failed before the
// damaged bytes went out.
func anyAnswer(outcome string) bool {
	if outcome == "close" {
		return true
	}
	name, closed := strings.CutSuffix(outcome, "+close")
	if name == "" || strings.ContainsAny(name, " +") {
		// "timeout", "no welcome", "hello: close", "bad welcome: ...",
		// "write failed: ...", "x+missing-replies", "x+wrong-req",
		// "x+malformed-answer" carry a space or a second +.
		return false
	}
	switch name {
	case "timeout", "malformed-answer", "error", "error:":
		// "error" alone is a read that failed otherwise (errClass), not
		// an error frame, which always has a code.
		return false
	case "error:malformed", "error:frame_too_large":
		return closed
	}
	return true
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
				Reproduce: fmt.Sprintf("apollo11 bench wire --addr %s --seed %d --probe %d", cfg.Addr, cfg.Seed, r.idx)})
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
	fc, err := dialClient(cfg.Addr, cfg.Token, "apollo11-bench-wire", cfg.Timeout)
	if err == nil {
		defer fc.c.Close()
		var m *wire.Message
		m, err = request(fc, wire.Begin(nil, "stats"), "stats", cfg.Timeout) // within --timeout, like every probe
		switch {
		case isTimeout(err):
			err = fmt.Errorf("no reply with req=stats within %v", cfg.Timeout)
		case err == nil && m.Type() != "stats":
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
	fmt.Fprintf(&b, "apollo11 bench wire: %d probes to %s in %.1f s (seed %d, peer max_frame %d)\n", rep.Probes, rep.Target,
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

package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// The attacks group: hostile peers, with or without the token, each
// pattern run against the real binary as its systemd unit runs it. Each
// records the main control's peak RSS (VmHWM), the round trips of a
// witness client making one request at a time, whether the process stayed
// up, and whether anything confirmed was lost. The suite asserts survival,
// the unit's MemoryMax, no loss, and that an honest peer is served once
// the attack ends; the witness's latency is published, not asserted.

// honestLimit bounds the wait, after an attack, for a fresh client's
// hello, submit and done. The promise is 1 s; the bound is generous
// because the host is shared, and the figure is published.
const honestLimit = 10 * time.Second

// seedTasks is how many tasks are confirmed before each attack.
const seedTasks = 200

// attackFor is how long each attack runs: a few seconds in the default
// mode (CI's), a minute under -soak.
func attackFor() time.Duration {
	if *soak {
		return time.Minute
	}
	return 2 * time.Second
}

// attackRun is one attack against one main control.
type attackRun struct {
	t      *testing.T
	row    *attackRow
	tg     *target
	addr   string
	token  []byte
	l      *ledger
	until  time.Time // when the attack is to stop
	wit    *witnessProc
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startAttack starts a main control as the unit runs it, with an honest
// executor serving type work, confirms seedTasks submits, and starts the
// witness; the attack may begin when it returns.
func startAttack(t *testing.T, order int, name string, token []byte, w witnessKind, extra ...string) *attackRun {
	t.Helper()
	if testing.Short() {
		t.Skip("attacks take a while")
	}
	tg := startTarget(t, token, extra...)
	r := &attackRun{t: t, tg: tg, addr: tg.addr, token: token, l: newLedger()}
	r.l.token = token
	r.row = attackRows.add(order, name)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	t.Cleanup(func() { cancel(); r.wg.Wait() })
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for ctx.Err() == nil { // an executor that comes back, as the real one does
			runExecutor(ctx, r.addr, "honest", r.l, 1, false)
			time.Sleep(100 * time.Millisecond)
		}
	}()
	r.seed()
	r.row.before = len(r.l.confirmedIDs())
	r.wit = startWitness(t, r.addr, token, r.l, w)
	r.until = time.Now().Add(attackFor())
	r.row.start = time.Now()
	return r
}

// seed confirms seedTasks submits with the suite's producer.
func (r *attackRun) seed() {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.l.limit = seedTasks
	done := make(chan struct{})
	go func() { defer close(done); produce(ctx, r.addr, r.l, 0, 0) }()
	deadline := time.Now().Add(30 * time.Second)
	for len(r.l.confirmedIDs()) < seedTasks {
		if time.Now().After(deadline) {
			r.t.Fatalf("only %d of %d seed submits confirmed", len(r.l.confirmedIDs()), seedTasks)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
}

// finish ends an attack whose drivers have returned: it times an honest
// peer's hello, submit and done, stops the witness, and checks and
// records survival, memory and loss.
func (r *attackRun) finish(injected string) {
	t := r.t
	t.Helper()
	r.row.injected = injected
	r.row.took = time.Since(r.row.start)
	r.row.honest, r.row.honestErr = honestPeer(r.addr, r.token, honestLimit)
	r.row.witness, r.row.witnessFailed, r.row.witnessRun, r.row.witnessErr = r.wit.stop()
	if errors.Is(r.row.witnessErr, errWitnessProcess) {
		t.Errorf("no witness figures: %v", r.row.witnessErr)
	}
	r.row.peak = r.tg.hwm.Load()
	r.row.memoryMax = r.tg.unit.memoryMax
	if r.row.honestErr != nil {
		r.awaitService()
	}
	r.row.ended = r.tg.down()
	if r.row.ended != "" {
		t.Errorf("the main control did not stay up: %s; its last output:\n%s", r.row.ended, lastLines(r.tg.proc.Output(), 10))
		r.tg.restart() // to count what the crash lost
	}
	r.row.during = len(r.l.confirmedIDs()) - r.row.before
	r.row.lost = r.l.verify(t, r.addr, r.token, false)
	r.tg.unguard()
	if r.row.peak >= r.row.memoryMax {
		t.Errorf("peak RSS %s MiB is not under the unit's MemoryMax %s MiB", mib(r.row.peak), mib(r.row.memoryMax))
	}
	if r.row.honestErr != nil {
		t.Errorf("after the attack an honest peer was not served within %v: %v", honestLimit, r.row.honestErr)
	}
	p50, p99, maxd := percentiles(r.row.witness)
	t.Logf("%s: injected %s in %v; peak RSS %s MiB; witness p50 %v p99 %v max %v over %d (%d failed: %v); honest peer after %v; confirmed %d before, %d during; lost %d",
		r.row.name, injected, r.row.took.Round(time.Millisecond), mib(r.row.peak), p50, p99, maxd,
		len(r.row.witness), r.row.witnessFailed, r.row.witnessErr, r.row.honest, r.row.before, r.row.during, r.row.lost)
}

// awaitService waits until the main control answers again, or until its
// guard ended it (a stalled loop meets the watchdog), so that what the
// attack lost can be counted.
func (r *attackRun) awaitService() {
	deadline := time.Now().Add(r.tg.unit.watchdog + 15*time.Second)
	for r.tg.down() == "" && time.Now().Before(deadline) {
		if _, err := probeOnce(r.addr, r.token, false); err == nil {
			return
		}
	}
}

// witnessTries is how many requests in a row may fail before the witness
// counts as refused service: an orchestrator restarts a service after
// three failed probes in a row (Kubernetes' default failureThreshold),
// and a client retries.
const witnessTries = 3

// requireWitnessServed fails the test if witnessTries witness requests in
// a row failed: for attacks on availability, whose harm is a refused or
// unanswered peer.
func (r *attackRun) requireWitnessServed() {
	r.t.Helper()
	if r.row.witnessRun >= witnessTries {
		r.t.Errorf("%d witness requests in a row failed during the attack (%d of %d in all; last: %v)",
			r.row.witnessRun, r.row.witnessFailed, len(r.row.witness), r.row.witnessErr)
	}
}

// honestPeer times a fresh client's hello, submit wait=true of type work
// and its done, retrying until limit; it returns the time from the call
// to the done.
func honestPeer(addr string, token []byte, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	deadline := start.Add(limit)
	for n := 0; ; n++ {
		err := honestOnce(addr, token, "honest-"+strconv.FormatInt(start.UnixNano(), 36)+"-"+strconv.Itoa(n), deadline)
		if err == nil {
			return time.Since(start), nil
		}
		if time.Now().After(deadline) {
			return time.Since(start), err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func honestOnce(addr string, token []byte, key string, deadline time.Time) error {
	p, err := dialClient(addr, token)
	if err != nil {
		return err
	}
	defer p.close()
	if err := p.send("submit", "req", "s", "task_type", "work", "key", key, "wait", "true"); err != nil {
		return err
	}
	for {
		m, err := p.recv(max(time.Until(deadline), time.Millisecond))
		if err != nil {
			return err
		}
		switch m.Type() {
		case "done":
			return nil
		case "error":
			return fmt.Errorf("submit: %s", m)
		}
	}
}

// drainUntil reads and drops frames until the reply to req arrives.
func drainUntil(p *peer, req string, deadline time.Time) error {
	for {
		m, err := p.recv(max(time.Until(deadline), time.Millisecond))
		if err != nil {
			return err
		}
		if m.Value("req") == req && m.Type() != "submitted" && m.Type() != "done" {
			return nil
		}
	}
}

// repeated returns n copies of the frame of one message.
func repeated(n int, typ string, kv ...string) []byte {
	f := frameOf(typ, kv...)
	b := make([]byte, 0, n*len(f))
	for i := 0; i < n; i++ {
		b = append(b, f...)
	}
	return b
}

// keyedTask submits one task of a type no executor serves, with key, and
// returns its id: it never ends unless cancelled.
func keyedTask(addr string, token []byte, key string) (uint64, error) {
	p, err := dialClient(addr, token)
	if err != nil {
		return 0, err
	}
	defer p.close()
	if err := p.send("submit", "req", "k", "task_type", "attack-none", "key", key); err != nil {
		return 0, err
	}
	m, err := p.recv(10 * time.Second)
	if err != nil {
		return 0, err
	}
	id, ok := wire.ParseUint(m.Value("task_id"))
	if m.Type() != "submitted" || !ok {
		return 0, errors.New("keyed task: " + m.String())
	}
	return id, nil
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

package reliability_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apollo11/apollo11/internal/testbin"
	"github.com/apollo11/apollo11/wire"
)

// TestMaincontrol_Kill9UnderLoad kills the main control with SIGKILL in
// the middle of a load of pipelined submits (with idempotency keys),
// cancels and results, restarts it on the same data dir, and checks after
// every round that nothing it confirmed was lost: submits, accepted
// results, cancels, idempotency keys; that ids are never reused; that no
// task has two accepted results; and that a fresh client is answered
// within probeLimit. At the end an executor drains the queue: every
// confirmed task must end.
func TestMaincontrol_Kill9UnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("kill rounds take a while")
	}
	sc := currentScale()
	fig := figures.add(1, "kill -9 of the main control under load", "rounds")
	dir := t.TempDir()
	flags := []string{"--snapshot-every", "50", "--retention-max", "100000000"}
	l := newLedger()
	rng := rand.New(rand.NewPCG(9, uint64(sc.killRounds)))
	var killedAt time.Time
	for round := 0; round < sc.killRounds; round++ {
		mc := startMain(t, dir, flags...)
		waitProbe(t, mc.Addr, nil, 30*time.Second)
		if !killedAt.IsZero() {
			fig.recovered(time.Since(killedAt))
		}
		fig.probed(probe(t, mc.Addr, nil, true))
		fig.lost += l.verify(t, mc.Addr, nil, false)
		if t.Failed() {
			t.FailNow()
		}
		killedAt = loadAndKill(t, mc, l, round, rng.Uint64(), time.Duration(100+rng.IntN(400))*time.Millisecond)
		fig.injected++
	}

	// Drain: a live executor runs everything left; every confirmed task
	// must end (tasks of the killed rounds' executors come back after the
	// heartbeat timeout, then their retry delay).
	mc := startMain(t, dir, flags...)
	waitProbe(t, mc.Addr, nil, 30*time.Second)
	fig.recovered(time.Since(killedAt))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); runExecutor(ctx, mc.Addr, "ex-drain", l, 1, false) }()
	dstart := time.Now()
	l.mu.Lock()
	drainFor := 60*time.Second + time.Duration(len(l.submitted))*time.Millisecond // soak leaves a backlog
	l.mu.Unlock()
	waitDrained(t, mc.Addr, nil, drainFor)
	t.Logf("drain took %v", time.Since(dstart))
	cancel()
	<-done
	l.account(t, mc.Addr, nil, fig)
	l.mu.Lock()
	fig.note("%d results and %d cancels confirmed; %d submits unconfirmed at a kill were found durable when resent with their key",
		len(l.accepted), len(l.cancelled), l.lateDurable)
	l.mu.Unlock()
}

// loadAndKill runs one round of load on mc (pipelined keyed submits,
// cancels, a raw executor), kills mc with SIGKILL wait after the round's
// first confirmed submit, and returns when the load has stopped.
func loadAndKill(t testing.TB, mc *testbin.Proc, l *ledger, round int, seed uint64, wait time.Duration) time.Time {
	t.Helper()
	l.mu.Lock()
	before := l.maxID
	l.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); produce(ctx, mc.Addr, l, round, 0) }()
	go func() { defer wg.Done(); runExecutor(ctx, mc.Addr, "ex-"+strconv.Itoa(round), l, seed, true) }()
	// Kill only once this round confirmed something: mid-stream.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		l.mu.Lock()
		confirmed := l.maxID > before
		l.mu.Unlock()
		if confirmed {
			break
		}
	}
	time.Sleep(wait)
	mc.Kill() // SIGKILL
	killedAt := time.Now()
	cancel()
	wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.maxID <= before {
		t.Errorf("round %d: no submit was confirmed", round)
	}
	return killedAt
}

// waitDrained waits until no task is left unended.
func waitDrained(t testing.TB, addr string, token []byte, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st := stats(t, addr, token)
		left := uint64(0)
		for _, s := range []string{"waiting", "pending", "dispatched", "running", "retrying"} {
			left += st.Tasks[s]
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d tasks still not ended after %v: %v", left, timeout, st.Tasks)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// produce pipelines submits (with idempotency keys) and cancels of some
// of them until the connection dies, recording what was confirmed. It
// first resends, with the same keys, the submits left unconfirmed by the
// previous crash, and re-submits a few confirmed keys, which must come
// back with their task id and duplicate=true. pace is a pause between
// batches of 32 (0: full speed). It sends at most l.limit new submits.
func produce(ctx context.Context, addr string, l *ledger, round int, pace time.Duration) {
	p, err := dialClient(addr, l.token)
	if err != nil {
		return
	}
	defer p.close()
	stop := context.AfterFunc(ctx, p.close)
	defer stop()
	l.mu.Lock()
	queue := l.unconfirmed
	l.unconfirmed = nil
	n := 0
	for key := range l.keyID { // map order: a random few
		if n++; n > 5 {
			break
		}
		queue = append(queue, key)
	}
	l.mu.Unlock()
	outstanding := map[string]bool{}
	defer func() {
		l.mu.Lock()
		for key := range outstanding {
			if _, ok := l.keyID[key]; !ok {
				l.unconfirmed = append(l.unconfirmed, key)
			}
		}
		l.mu.Unlock()
	}()
	seq := 0
	for ctx.Err() == nil {
		batch := 0
		for i := 0; i < 32; i++ {
			var key string
			if len(queue) > 0 {
				key, queue = queue[0], queue[1:]
			} else {
				l.mu.Lock()
				full := l.limit > 0 && l.sent >= l.limit
				l.mu.Unlock()
				if full {
					break
				}
				seq++
				key = "r" + strconv.Itoa(round) + "-" + strconv.Itoa(seq)
				l.mu.Lock()
				l.sent++
				l.mu.Unlock()
			}
			if p.write("submit", "req", key, "task_type", "work", "key", key, "arg.key", key) != nil {
				return
			}
			outstanding[key] = true
			batch++
		}
		if p.flush() != nil {
			return
		}
		if pace > 0 || batch == 0 {
			time.Sleep(max(pace, 10*time.Millisecond))
		}
		for waiting := batch; waiting > 0; {
			m, err := p.recv(0)
			if err != nil {
				return
			}
			waiting--
			switch m.Type() {
			case "submitted":
				key := m.Value("req")
				id, _ := wire.ParseUint(m.Value("task_id"))
				delete(outstanding, key)
				l.confirm(key, id, m.Value("duplicate") == "true")
				if id%7 == 0 {
					if p.send("cancel", "req", "c", "task_id", itoa(id)) != nil {
						return
					}
					waiting++
				}
			case "cancelled":
				id, _ := wire.ParseUint(m.Value("task_id"))
				l.cancel(id)
			case "error":
				if m.Value("code") == string(wire.CodeUnavailable) {
					l.mu.Lock()
					l.unavailable++
					l.mu.Unlock()
				}
			}
		}
	}
}

// runExecutor registers a raw executor and runs every task it is sent:
// most at once (started and result in one write), some after a short hold
// (started at once, listed in its heartbeats), so that a crash finds tasks
// running; without hold, every task at once, on 256 slots. Accepted
// results are recorded.
func runExecutor(ctx context.Context, addr, id string, l *ledger, seed uint64, hold bool) {
	slots := 16
	if !hold {
		slots = 256 // draining: as fast as the main control goes
	}
	p, _, err := dialExecutor(addr, id, "work", slots, l.token)
	if err != nil {
		return
	}
	defer p.close()
	stop := context.AfterFunc(ctx, p.close)
	defer stop()
	rng := rand.New(rand.NewPCG(seed, 3))
	var mu sync.Mutex // the writer and running are shared with the timers
	running := map[string]bool{}
	finish := func(tid, ver string) {
		mu.Lock()
		defer mu.Unlock()
		delete(running, tid+"."+ver)
		_ = p.send("result", "task_id", tid, "version", ver, "status", "succeeded", "out.done", "1")
	}
	go func() {
		hb := time.NewTicker(400 * time.Millisecond)
		defer hb.Stop()
		for seq := 1; ; seq++ {
			select {
			case <-ctx.Done():
				return
			case <-hb.C:
			}
			mu.Lock()
			list := make([]string, 0, len(running))
			for tok := range running {
				list = append(list, tok)
			}
			_ = p.send("heartbeat", "seq", strconv.Itoa(seq), "running", strings.Join(list, ","))
			mu.Unlock()
		}
	}()
	for {
		m, err := p.recv(0)
		if err != nil {
			return
		}
		switch m.Type() {
		case "task":
			tid, ver := m.Value("task_id"), m.Value("version")
			id, _ := wire.ParseUint(tid)
			v, _ := wire.ParseUint(ver)
			l.dispatched(id, v)
			if hold && rng.IntN(5) == 0 {
				mu.Lock()
				running[tid+"."+ver] = true
				_ = p.send("started", "task_id", tid, "version", ver)
				mu.Unlock()
				time.AfterFunc(time.Duration(50+rng.IntN(200))*time.Millisecond, func() { finish(tid, ver) })
				continue
			}
			mu.Lock()
			_ = p.write("started", "task_id", tid, "version", ver)
			_ = p.write("result", "task_id", tid, "version", ver, "status", "succeeded", "out.done", "1")
			_ = p.flush()
			mu.Unlock()
		case "result_ack":
			if m.Value("accepted") == "true" {
				tid, _ := wire.ParseUint(m.Value("task_id"))
				l.accept(tid)
			}
		}
	}
}

package reliability_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// frameOf encodes one message as a whole frame.
func frameOf(typ string, kv ...string) []byte {
	b, err := wire.AppendFrame(nil, message(typ, kv...))
	if err != nil {
		panic(err)
	}
	return b
}

// background is a well-behaved producer (about 1,500 submits a second,
// 20,000 at most, so that the task state it leaves stays small beside the
// memory bound) and executor working through a fault, recording what the
// main control confirms.
type background struct {
	l      *ledger
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startBackground(addr string, l *ledger, name string) *background {
	ctx, cancel := context.WithCancel(context.Background())
	if l.limit == 0 {
		l.limit = 20_000
	}
	bg := &background{l: l, cancel: cancel}
	bg.wg.Add(2)
	go func() { defer bg.wg.Done(); produce(ctx, addr, l, 0, 20*time.Millisecond) }()
	go func() { defer bg.wg.Done(); runExecutor(ctx, addr, "bg-"+name, l, 5, false) }()
	return bg
}

// stop ends the load and checks the ledger once every task ended.
func (bg *background) stop(t testing.TB, addr string, fig *figure) {
	t.Helper()
	bg.cancel()
	bg.wg.Wait()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); runExecutor(ctx, addr, "drain", bg.l, 1, false) }()
	bg.l.waitEnded(t, addr, bg.l.token, 60*time.Second)
	cancel()
	<-done
	bg.l.account(t, addr, bg.l.token, fig)
}

// settle ends an attack's figure: how long the main control took to close
// the attack's connections (all but the load's producer and executor), a
// probe that it still answers, and the load's own check.
func (bg *background) settle(t testing.TB, addr string, fig *figure) {
	t.Helper()
	fig.recovered(waitConnections(t, addr, nil, 2, 10*time.Second))
	fig.probed(probe(t, addr, nil, true))
	bg.stop(t, addr, fig)
}

// parallel runs fn(i) for i in [0, n) on workers goroutines.
func parallel(n, workers int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// probeStats collects probes made while a fault runs.
type probeStats struct {
	mu      sync.Mutex
	n, over int
	slowest time.Duration
	errs    int
	lastErr error
}

// run probes every 100 ms until the returned function is called.
func (ps *probeStats) run(addr string, token []byte) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
			}
			d, err := probeOnce(addr, token, true)
			ps.mu.Lock()
			ps.n++
			switch {
			case err != nil:
				ps.errs++
				ps.lastErr = err
			case d > probeLimit:
				ps.over++
			}
			ps.slowest = max(ps.slowest, d)
			ps.mu.Unlock()
		}
	}()
	return func() { close(done); <-stopped }
}

func (ps *probeStats) String() string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	s := fmt.Sprintf("%d, slowest %s, %d over %v, %d failed", ps.n, ms(ps.slowest), ps.over, probeLimit, ps.errs)
	if ps.lastErr != nil {
		s += fmt.Sprintf(" (%v)", ps.lastErr)
	}
	return s
}
